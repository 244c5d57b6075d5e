package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/modeltest"
)

var update = flag.Bool("update", false, "re-record testdata/*.jsonl by running the real agent CLIs against scripted model servers")

// recordDir is the fixed working directory of the recorded sessions, so
// that the paths in testdata do not change from one recording to the next.
const recordDir = "/tmp/paddock-transcript-work"

// recordSessionID is the Claude Code session id of the recording.
const recordSessionID = "5e55a0c1-0d0c-4a7e-8f00-000000000001"

// recordPrompts are the turns of every recorded session: a shell command
// with output, a file write, and a plain message.
var recordPrompts = []string{
	"RUN: echo hello-from-tool | tee marker.txt",
	"WRITE: " + recordDir + "/notes.txt",
	"thanks",
}

// TestRecord re-records the transcripts in testdata when run with -update:
//
//	go test ./internal/transcript -run TestRecord -update
//
// The tests that read them assert numbers (token counts) that a new
// recording changes; update them with it.
func TestRecord(t *testing.T) {
	if !*update {
		t.Skip("run with -update to re-record testdata from the real CLIs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Run("claude", func(t *testing.T) {
		modeltest.RequireCLI(t, "claude")
		s := modeltest.NewAnthropic(t)
		home, dir := t.TempDir(), freshDir(t)
		for i, prompt := range recordPrompts {
			args := []string{"-p", prompt, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}
			if i == 0 {
				args = append(args, "--session-id", recordSessionID)
			} else {
				args = append(args, "--resume", recordSessionID)
			}
			output(t, s.ClaudeCmd(ctx, home, dir, args...))
		}
		project := strings.ReplaceAll(dir, "/", "-")
		saveTranscript(t, filepath.Join(home, ".claude", "projects", project, recordSessionID+".jsonl"), "claude.jsonl")
	})
	t.Run("codex", func(t *testing.T) {
		modeltest.RequireCLI(t, "codex")
		s := modeltest.NewOpenAIResponses(t)
		home, dir := t.TempDir(), freshDir(t)
		codex := func(args ...string) []byte {
			args = append([]string{"exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "--json"}, args...)
			cmd, err := s.CodexCmd(ctx, home, dir, args...)
			if err != nil {
				t.Fatal(err)
			}
			return output(t, cmd)
		}
		first, _, _ := bytes.Cut(codex(recordPrompts[0]), []byte("\n"))
		var started struct {
			ThreadID string `json:"thread_id"`
		}
		if err := json.Unmarshal(first, &started); err != nil || started.ThreadID == "" {
			t.Fatalf("no thread id in %q: %v", first, err)
		}
		for _, prompt := range recordPrompts[1:] {
			codex("resume", started.ThreadID, prompt)
		}
		rollouts, err := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*.jsonl"))
		if err != nil || len(rollouts) != 1 {
			t.Fatalf("rollouts %v, %v: want exactly one", rollouts, err)
		}
		saveTranscript(t, rollouts[0], "codex.jsonl")
	})
}

// output runs cmd and returns its standard output.
func output(t *testing.T, cmd *exec.Cmd) []byte {
	t.Helper()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	return out
}

// freshDir empties recordDir for a recording and removes it afterwards.
func freshDir(t *testing.T) string {
	t.Helper()
	if err := os.RemoveAll(recordDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(recordDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(recordDir) })
	return recordDir
}

// saveTranscript copies a transcript into testdata, refusing one that holds
// the test key.
func saveTranscript(t *testing.T, from, name string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(modeltest.TestKey)) {
		data = bytes.ReplaceAll(data, []byte(modeltest.TestKey), []byte("REDACTED"))
		t.Logf("%s held the test key: replaced", name)
	}
	if err := os.WriteFile(filepath.Join("testdata", name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
