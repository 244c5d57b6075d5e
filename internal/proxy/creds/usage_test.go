package creds

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestUsageOfAStreamReadByteByByte: usage is read from event lines however the stream
// is cut into reads, the bytes pass on unchanged, a message_delta that says only the
// output keeps message_start's input, and an over-long line is passed on unread.
func TestUsageOfAStreamReadByteByByte(t *testing.T) {
	long := strings.Repeat("x", maxLine+10)
	stream := "event: message_start\r\n" +
		`data: {"type":"message_start","message":{"id":"m","model":"claude-opus-4-1","usage":{"input_tokens":1500,"output_tokens":1,"cache_read_input_tokens":900,"cache_creation_input_tokens":40}}}` + "\r\n\r\n" +
		"event: content_block_delta\n" +
		`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"the \"usage\" word ` + long + `"}}` + "\n\n" +
		"event: message_delta\n" +
		`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":321}}` + "\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for _, reader := range []struct {
		name string
		r    io.Reader
	}{{"one byte", iotest.OneByteReader(strings.NewReader(stream))}, {"half", iotest.HalfReader(strings.NewReader(stream))}, {"whole", strings.NewReader(stream)}} {
		t.Run(reader.name, func(t *testing.T) {
			var got Answer
			calls := 0
			r := watchUsage(io.NopCloser(reader.r), WireAnthropic, "text/event-stream; charset=utf-8", Answer{Status: 200}, func(a Answer) { got = a; calls++ })
			out, err := io.ReadAll(r)
			if err != nil || string(out) != stream {
				t.Fatalf("the stream changed on its way (err %v)", err)
			}
			r.Close()
			want := Usage{Input: 1500, Output: 321, CacheRead: 900, CacheWrite: 40}
			if calls != 1 || !got.Reported || got.Usage != want || got.Model != "claude-opus-4-1" {
				t.Errorf("got %+v (%d calls), want %+v", got, calls, want)
			}
		})
	}
}

// TestUsageOfACutStream: a stream cut before its final event reports what it said so far,
// once, when the proxy closes it.
func TestUsageOfACutStream(t *testing.T) {
	stream := `data: {"type":"response.created","response":{"model":"gpt-5","usage":null}}` + "\n\n" +
		`data: {"type":"response.output_text.delta","delta":"hel`
	var got []Answer
	r := watchUsage(io.NopCloser(strings.NewReader(stream)), WireOpenAI, "text/event-stream", Answer{}, func(a Answer) { got = append(got, a) })
	buf := make([]byte, 100) // the first line and part of the second
	r.Read(buf)
	r.Close()
	r.Close()
	if len(got) != 1 || got[0].Reported || got[0].Model != "gpt-5" {
		t.Errorf("got %+v", got)
	}
}

// TestUsageOfChatCompletions: OpenAI-compatible providers' Chat Completions stream says
// its usage in a last chunk, with the cached tokens inside the prompt's.
func TestUsageOfChatCompletions(t *testing.T) {
	stream := `data: {"id":"c","model":"qwen3-coder","choices":[{"delta":{"content":"hi"}}],"usage":null}` + "\n\n" +
		`data: {"id":"c","model":"qwen3-coder","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":50,"prompt_tokens_details":{"cached_tokens":600}}}` + "\n\n" +
		"data: [DONE]\n\n"
	var got Answer
	io.ReadAll(watchUsage(io.NopCloser(strings.NewReader(stream)), WireOpenAI, "text/event-stream", Answer{}, func(a Answer) { got = a }))
	if want := (Usage{Input: 400, Output: 50, CacheRead: 600}); got.Usage != want || got.Model != "qwen3-coder" {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
