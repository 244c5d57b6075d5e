package alarm

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/transcript"
)

func TestControlFile(t *testing.T) {
	for _, tc := range []struct {
		path  string
		alarm bool
	}{
		{"/home/agent/.claude/settings.json", true},
		{"/home/agent/.claude/settings.local.json", true},
		{"/home/agent/.claude/hooks/notify.sh", true},
		{"/root/.codex/config.toml", true},
		{"/home/agent/.gemini/settings.json", true},
		{"/workspace/.claude/settings.json", true},
		{"/workspace/.claude/settings.local.json", true},
		{".claude/settings.json", true},
		{"/workspace/.mcp.json", true},
		{"/workspace/.git/hooks/pre-commit", true},
		{"/workspace/.git/config", true},
		{"/workspace/.git/info/attributes", true},
		{"/workspace/.worktrees/fix/.claude/settings.json", true},
		{"/workspace/.envrc", true},
		{"/workspace/.vscode/tasks.json", true},
		{"/workspace/.qwen/settings.json", true},
		{"/workspace/./x/../.git/hooks/post-merge", true},
		// ordinary work, and the agents' own bookkeeping
		{"/workspace/main.go", false},
		{"/workspace/Makefile", false},
		{"/workspace/web/package.json", false},
		{"/workspace/.git/index", false},
		{"/workspace/.git/refs/heads/main", false},
		{"/workspace/CLAUDE.md", false},
		{"/home/agent/.claude/projects/-workspace/abc.jsonl", false},
		{"/home/agent/.claude.json", false},
		{"/home/agent/.codex/sessions/2026/x.jsonl", false},
		{"/tmp/.claude/settings.json", false},
		{"../.claude/settings.json", false},
	} {
		if got := ControlFile(tc.path) != ""; got != tc.alarm {
			t.Errorf("ControlFile(%q) = %q, want alarm %v", tc.path, ControlFile(tc.path), tc.alarm)
		}
	}
}

func call(tool string, input any) transcript.Entry {
	raw, _ := json.Marshal(input)
	return transcript.Entry{Kind: transcript.KindToolCall, Tool: tool, Input: raw}
}

func TestToolEntry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry transcript.Entry
		kinds []string
	}{
		{"bash reads the host through pid 1", call("Bash", map[string]string{"command": "cat /proc/1/root/etc/hostname"}), []string{KindProcRoot}},
		{"self root", call("Bash", map[string]string{"command": "ls /proc/self/root/"}), []string{KindProcRoot}},
		{"another process's fd", call("shell", map[string]any{"command": []string{"bash", "-lc", "cat /proc/42/fd/3"}}), []string{KindProcRoot}},
		{"claude writes its settings", call("Write", map[string]string{"file_path": "/workspace/.claude/settings.json", "content": "{}"}), []string{KindControlFile}},
		{"claude edits its home hooks", call("Edit", map[string]string{"file_path": "/home/agent/.claude/settings.local.json", "old_string": "a", "new_string": "b"}), []string{KindControlFile}},
		{"gemini writes a git hook", call("write_file", map[string]string{"file_path": "/workspace/.git/hooks/post-merge"}), []string{KindControlFile}},
		{"codex patch", call("apply_patch", "*** Begin Patch\n*** Add File: .mcp.json\n+{}\n*** End Patch"), []string{KindControlFile}},
		{"file change", transcript.Entry{Kind: transcript.KindFileChange, Tool: "Write", Path: "/workspace/.git/config"}, []string{KindControlFile}},
		// must not alarm
		{"ordinary write", call("Write", map[string]string{"file_path": "/workspace/main.go"}), nil},
		{"reading settings", call("Read", map[string]string{"file_path": "/workspace/.claude/settings.json"}), nil},
		{"own fd", call("Bash", map[string]string{"command": "echo hi 2>/proc/self/fd/2; cat /proc/self/status"}), nil},
		{"proc of the machine", call("Bash", map[string]string{"command": "cat /proc/cpuinfo /proc/1/status"}), nil},
		{"assistant text", transcript.Entry{Kind: transcript.KindAssistant, Text: "I could read /proc/1/root"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var kinds []string
			for _, f := range ToolEntry(tc.entry) {
				kinds = append(kinds, f.Kind)
				if f.Source != "transcript" || f.Detail == "" {
					t.Errorf("finding %+v", f)
				}
			}
			if fmt.Sprint(kinds) != fmt.Sprint(tc.kinds) {
				t.Errorf("kinds %v, want %v (%+v)", kinds, tc.kinds, ToolEntry(tc.entry))
			}
		})
	}
}

func TestDataLabels(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, host := range []string{
		"4a6f686e20446f652070617373776f72643a2068756e74657232.exfil.example.com",
		"mzxw6ytboi2dknrxgq3tmnzygm3dkmbqgi3tiobxha4dm.data.example.net",
		"aGVsbG8gd29ybGQgdGhpcyBpcyBzZWNyZXQgZGF0YQ.example.org",
		"x7k2q9z8w4m1n6b3v5c0pr8yj.tunnel.example.io",
	} {
		if f, ok := NewNames().Check("sb", host, now); !ok || f.Kind != KindDNSData {
			t.Errorf("%s: no alarm", host)
		}
	}
	for _, host := range []string{
		"api.anthropic.com", "registry.npmjs.org", "proxy.golang.org", "objects.githubusercontent.com",
		"d1a2b3c4d5e6f7.cloudfront.net", "production.cloudflare.docker.com", "pkg-containers.githubusercontent.com",
		"my-company-build-artifacts-production-eu-west-1.s3.amazonaws.com", "files.pythonhosted.org",
		"fonts.gstatic.com", "www.bbc.co.uk", "140.82.112.3", "[2606:4700::1111]", "localhost",
		"storage.googleapis.com", "a1.b2.example.com", "e3b0c44298fc1c14.global.ssl.fastly.net",
	} {
		if f, ok := NewNames().Check("sb", host, now); ok {
			t.Errorf("%s: alarm %q", host, f.Detail)
		}
	}
}

func TestManyNames(t *testing.T) {
	n := NewNames()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fired := 0
	for i := range 3 * ManyNames {
		f, ok := n.Check("sb", fmt.Sprintf("chunk%d.x.example.com", i), now.Add(time.Duration(i)*time.Second/2))
		if ok {
			fired++
			if !strings.Contains(f.Detail, "under example.com") {
				t.Errorf("detail %q", f.Detail)
			}
		}
		if i == ManyNames-2 && fired > 0 {
			t.Fatalf("fired at %d names", i+1)
		}
	}
	if fired != 1 {
		t.Errorf("fired %d times, want once in its quiet time", fired)
	}
	// Another sandbox has its own window; names spread over time do not add up.
	for i := range 3 * ManyNames {
		if f, ok := n.Check("other", fmt.Sprintf("s%d.cdn.example.com", i%ManyNames/2+i), now.Add(time.Duration(i)*5*time.Second)); ok {
			t.Fatalf("slow names fired: %s", f.Detail)
		}
	}
	// The same few names over and over are no data.
	for i := range 1000 {
		if _, ok := n.Check("third", fmt.Sprintf("s%d.example.com", i%3), now); ok {
			t.Fatal("repeated names fired")
		}
	}
	// Memory stays bounded.
	for i := range 10 * maxParents {
		n.Check("bounded", fmt.Sprintf("a.p%d.com", i), now)
	}
	if got := len(n.sbs["bounded"].parents); got > maxParents {
		t.Errorf("%d parents kept", got)
	}
}

// TestControlFindingAlike: one write of a control file, seen in a transcript and by the
// file watch, is worded alike (so it stands as one alarm), a long path included.
func TestControlFindingAlike(t *testing.T) {
	p := "/workspace/.git/hooks/" + strings.Repeat("h", 400)
	why := ControlFile(p)
	if why == "" {
		t.Fatalf("%s is not a control file", p)
	}
	seen := ToolEntry(transcript.Entry{Kind: transcript.KindFileChange, Tool: "Write", Path: p})
	if len(seen) != 1 {
		t.Fatalf("the transcript's write gave %+v", seen)
	}
	if watched := ControlFinding(p, why, "files", "modified"); watched.Detail != seen[0].Detail {
		t.Errorf("the file watch words it %q, the transcript %q", watched.Detail, seen[0].Detail)
	}
}
