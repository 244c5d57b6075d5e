package agents

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// learner takes no chosen id: it reports its own, and resumes by it.
var learner = &Agent{Name: "learner", Binary: "learn", Command: []string{"learn", "--yes"},
	New: []string{"--in", "{dir}"}, Resume: []string{"resume", "{id}"},
	Ask: []string{"ask", "{id}", "{prompt}"}, Answer: PrintedAnswer,
	Transcript: "{home}/.learn/{dir-}/{id}.jsonl", Parse: nil}

// chooser takes the id paddock chooses, and forks.
var chooser = &Agent{Name: "chooser", Binary: "choose", Command: []string{"choose", "--system", "{system}"},
	New: []string{"--id", "{id}"}, Resume: []string{"--resume", "{id}"}, Fork: []string{"--from", "{from}", "--id", "{id}"},
	Ask: []string{"-p", "{prompt}", "--resume", "{id}"}, AskNew: []string{"-p", "{prompt}", "--id", "{id}"}, Answer: PrintedAnswer,
	ChoosesID: true, Memory: "/home/agent/.choose/MEMORY.md"}

func TestArgv(t *testing.T) {
	s := Session{Name: "fix", ResumeID: "abc", Dir: "/workspace/.worktrees/fix"}
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"launch", learner.LaunchArgv(s), []string{"learn", "--yes", "--in", "/workspace/.worktrees/fix"}},
		{"resume by the learnt id", learner.ResumeArgv(s), []string{"learn", "--yes", "resume", "abc"}},
		{"no id learnt yet: a new conversation", learner.ResumeArgv(Session{Dir: "/workspace"}), []string{"learn", "--yes", "--in", "/workspace"}},
		{"a prompt is never expanded", learner.AskArgv(s, "say {id} and {prompt}"), []string{"learn", "--yes", "ask", "abc", "say {id} and {prompt}"}},
		{"no transcript yet: launch", chooser.ResumeArgv(Session{ResumeID: "n", Fresh: true})[3:], []string{"--id", "n"}},
		{"fork", chooser.ForkArgv(s, "old")[3:], []string{"--from", "old", "--id", "abc"}},
		{"ask a fresh conversation", chooser.AskArgv(Session{ResumeID: "n", Fresh: true}, "hi")[3:], []string{"-p", "hi", "--id", "n"}},
		{"ask", chooser.AskArgv(s, "hi")[3:], []string{"-p", "hi", "--resume", "abc"}},
	}
	for _, tt := range tests {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("%s: argv %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if got := chooser.LaunchArgv(s)[2]; got != SystemPrompt {
		t.Errorf("{system} became %q", got)
	}
	if learner.ForkArgv(s, "old") != nil || learner.CanFork() {
		t.Error("an agent with no fork argv forks")
	}
	if (&Agent{Command: []string{"x"}}).AskArgv(s, "hi") != nil {
		t.Error("an agent with no Ask has a non-interactive argv")
	}
}

func TestTranscriptPath(t *testing.T) {
	a := *learner
	a.Parse = chooserParse
	if got, want := a.TranscriptPath(Session{ResumeID: "abc", Dir: "/workspace"}), "/home/agent/.learn/-workspace/abc.jsonl"; got != want {
		t.Errorf("transcript %q, want %q", got, want)
	}
	if got := a.TranscriptPath(Session{Dir: "/workspace"}); got != "" {
		t.Errorf("a transcript named after an id not learnt yet: %q", got)
	}
}

func TestPromptFiles(t *testing.T) {
	// The prompt passed in argv is not written again; the note always goes to memory.
	if files := chooser.PromptFiles(Session{}); files != nil {
		t.Errorf("an agent that takes {system} got prompt files: %+v", files)
	}
	if f, ok := chooser.DisposableFile(); !ok || f.Section != "paddock-disposable" || f.Path != chooser.Memory ||
		!strings.Contains(string(f.Content), "disposable") {
		t.Errorf("the disposable note of an agent with a memory file: %+v %v", f, ok)
	}
	memo := &Agent{Name: "m", Binary: "m", Command: []string{"m"}, Memory: "/home/agent/M.md"}
	if files := memo.PromptFiles(Session{}); len(files) != 1 || files[0].Section != "paddock" || string(files[0].Content) != SystemPrompt+"\n" {
		t.Errorf("prompt files of an agent that reads memory: %+v", files)
	}
	// In a VM of its own, the agent is told it has sudo, Docker, and a machine that may go.
	if files := memo.PromptFiles(Session{Machine: true}); len(files) != 1 || string(files[0].Content) != MachinePrompt+"\n" {
		t.Errorf("prompt files in a machine: %+v", files)
	}
	if got := strings.Join(chooser.LaunchArgv(Session{Machine: true, Dir: "/workspace"}), " "); !strings.Contains(got, "sudo works without a password") {
		t.Errorf("the system prompt on the command line in a machine: %q", got)
	}
	if files := learner.PromptFiles(Session{}); files != nil {
		t.Errorf("an agent without memory got %+v", files)
	}
	if _, ok := learner.DisposableFile(); ok {
		t.Error("an agent without memory can be told its sandbox is disposable")
	}
}

func TestCheck(t *testing.T) {
	bad := []*Agent{
		{Name: "x", Binary: "x"},
		{Name: "x", Binary: "x", Command: []string{"x"}, Ask: []string{"-p"}},
		{Name: "x", Binary: "x", Command: []string{"x"}, Transcript: "/t.jsonl"},
		{Name: "x", Binary: "x", Command: []string{"x"}, ChoosesID: true},
	}
	for i, a := range bad {
		if a.check() == nil {
			t.Errorf("description %d accepted: %+v", i, a)
		}
	}
	if err := chooser.check(); err != nil {
		t.Errorf("a good description refused: %v", err)
	}
}

var chooserParse = func(r io.Reader) ([]wire.TranscriptEntry, error) { return nil, nil }
