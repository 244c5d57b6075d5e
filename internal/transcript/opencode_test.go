package transcript

import (
	"os"
	"strings"
	"testing"
)

// testdata/opencode.json is what the real OpenCode 1.18.33 exported (`opencode export
// ID`) after one turn against a scripted model: a message, a bash call, the answer.
func TestParseOpenCode(t *testing.T) {
	f, err := os.Open("testdata/opencode.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ParseOpenCode(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Kind: KindUser, Text: "RUN: echo hi2"},
		{Kind: KindAssistant, Text: "Running the command.", Usage: &Usage{InputTokens: 7289, OutputTokens: 88, CacheReadTokens: 64}},
		{Kind: KindToolCall, Tool: "bash", CallID: "call_modeltest_7", Input: raw(`{"command":"echo hi2","description":"Run the command"}`)},
		{Kind: KindToolResult, Tool: "bash", CallID: "call_modeltest_7", Output: "hi2\n"},
		{Kind: KindAssistant, Text: "DONE: hi2", Usage: &Usage{InputTokens: 7367, OutputTokens: 39, CacheReadTokens: 64}},
	}
	checkEntries(t, got, want)
}

func TestParseOpenCodeEdits(t *testing.T) {
	input := `{"info":{"id":"ses_1"},"messages":[
{"info":{"role":"user","time":{"created":1000}},"parts":[{"type":"text","text":"fix it"},{"type":"text","text":"ctx","synthetic":true}]},
{"info":{"role":"assistant","time":{"created":2000}},"parts":[
 {"type":"tool","tool":"write","callID":"w1","state":{"status":"completed","input":{"filePath":"/workspace/a.go","content":"x"},"output":"ok","time":{"start":2001,"end":2002}}},
 {"type":"tool","tool":"edit","callID":"e1","state":{"status":"error","input":{"filePath":"/workspace/b.go"},"error":"no match","time":{"start":2003,"end":2004}}}]}]}`
	got, err := ParseOpenCode(strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Kind: KindUser, Text: "fix it"},
		{Kind: KindToolCall, Tool: "write", CallID: "w1", Input: raw(`{"filePath":"/workspace/a.go","content":"x"}`)},
		{Kind: KindToolResult, Tool: "write", CallID: "w1", Output: "ok"},
		{Kind: KindFileChange, Tool: "write", CallID: "w1", Path: "/workspace/a.go"},
		{Kind: KindToolCall, Tool: "edit", CallID: "e1", Input: raw(`{"filePath":"/workspace/b.go"}`)},
		{Kind: KindToolResult, Tool: "edit", CallID: "e1", Output: "no match"},
	}
	checkEntries(t, got, want)
	if _, err := ParseOpenCode(strings.NewReader("not json")); err == nil {
		t.Error("a broken export parsed")
	}
}
