package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// quickStart returns the command lines of the README's quick start (its first sh block
// after "## Quick start"), without their comments.
func quickStart(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "## Quick start\n")
	if !ok {
		t.Fatal("the README has no Quick start section")
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatal("the README's quick start has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		if i := strings.Index(line, "  #"); i >= 0 {
			line = line[:i]
		}
		lines = append(lines, strings.TrimSpace(line))
	}
	return lines
}

// TestQuickStart runs the README's quick start as a new user would, from the key to the
// agent's commit merged into the user's branch: the real Claude Code in a bwrap sandbox,
// against a scripted model (whose script understands "RUN: COMMAND", so the prompt is
// swapped for one that makes it commit). The install lines are checked against what they
// install, not run: the test runs the programs this checkout builds.
func TestQuickStart(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "claude")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	lines := quickStart(t)
	if len(lines) > 5 {
		t.Errorf("the quick start has %d commands, more than five:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	model := modeltest.NewAnthropic(t)
	h, made := e2eHome(t)
	home := h.Dir
	h.Setenv("ANTHROPIC_BASE_URL", model.URL())
	h.Setenv("ANTHROPIC_API_KEY", "")     // the key comes from the quick start's own command
	repo := filepath.Join(home, "myrepo") // as the quick start names it
	if err := os.Rename(made, repo); err != nil {
		t.Fatal(err)
	}
	paddock := newPaddock(h)
	const realKey = "sk-ant-quickstart-0123456789abcdefghijklmnop"
	claude, _ := agents.Get("claude")
	const commit = "RUN: echo 1.0 > VERSION && git add VERSION && git commit -q -m 'Add a VERSION file'"

	var began time.Time
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "go install "):
			// go install PATTERN@latest: the pattern must name the three programs that
			// work together, and nothing else.
			pattern := strings.TrimSuffix(strings.Fields(line)[2], "@latest")
			out, err := exec.Command("go", "list", "-f", "{{.Name}} {{.ImportPath}}", pattern).CombinedOutput()
			if err != nil {
				t.Fatalf("go list %s: %v\n%s", pattern, err, out)
			}
			got := strings.Fields(string(out))
			want := []string{"main", "github.com/paddockhq/paddock/cmd/paddock", "main", "github.com/paddockhq/paddock/cmd/paddock-full", "main", "github.com/paddockhq/paddock/cmd/paddock-guest"}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s installs %v, want paddock, paddock-full and paddock-guest", line, got)
			}
		case strings.Contains(line, "apt-get install"):
			for _, need := range []string{"bubblewrap", "git", "tmux", claude.Install} {
				if !strings.Contains(line, need) {
					t.Errorf("the quick start's install line %q lacks %q", line, need)
				}
			}
		case strings.HasPrefix(line, "paddock "):
			args := splitLine(strings.TrimPrefix(line, "paddock "))
			stdin := ""
			for i, a := range args {
				switch {
				case a == "~/src/myrepo":
					args[i] = repo
				case i > 0 && args[i-1] == "--prompt":
					args[i] = commit
				}
			}
			if args[0] == "key" {
				stdin = realKey + "\n"
			}
			if args[0] == "up" {
				began = time.Now()
			}
			if args[0] == "merge" {
				waitIdle(t, paddock, "myrepo")
			}
			out, errOut, code := paddock(stdin, args...)
			t.Logf("$ %s\n%s%s", line, out, errOut)
			if code != 0 {
				t.Fatalf("%s: exit %d", line, code)
			}
		default:
			t.Fatalf("the quick start has a line this test does not know: %q", line)
		}
	}
	if began.IsZero() {
		t.Fatal("the quick start never runs paddock up")
	}
	t.Logf("from up to the merged commit: %v", time.Since(began).Round(10*time.Millisecond))

	// The agent's commit is on the user's branch, its file in the user's working tree.
	subject, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%s", "main").Output()
	if err != nil || strings.TrimSpace(string(subject)) != "Add a VERSION file" {
		t.Fatalf("after the quick start, main's last commit is %q (%v)", subject, err)
	}
	if b, err := os.ReadFile(filepath.Join(repo, "VERSION")); err != nil || string(b) != "1.0\n" {
		t.Fatalf("VERSION in the user's working tree: %q, %v", b, err)
	}
	if model.Key() != realKey {
		t.Fatalf("the model got key %q, want the one key set was given", model.Key())
	}
}

// waitIdle waits until the sandbox's sessions have all finished their turn, as a user
// would watch `paddock ls` for it.
func waitIdle(t *testing.T, paddock paddockRun, sandbox string) {
	t.Helper()
	waitUntil(t, 2*time.Minute, "the agent's turn to end", func() bool {
		out, _, code := paddock("", "ls", "--json")
		var list []struct {
			Name     string
			Sessions []struct{ Status string }
		}
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
			return false
		}
		for _, sb := range list {
			if sb.Name != sandbox || len(sb.Sessions) == 0 {
				continue
			}
			for _, s := range sb.Sessions {
				if s.Status != "idle" {
					return false
				}
			}
			return true
		}
		return false
	})
}

// splitLine splits a command line of the README into words: blanks separate them, and a
// double-quoted word keeps its blanks.
func splitLine(line string) []string {
	var words []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if line[0] == '"' {
			end := strings.IndexByte(line[1:], '"')
			if end < 0 {
				return append(words, line[1:])
			}
			words = append(words, line[1:end+1])
			line = line[end+2:]
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		words = append(words, word)
		line = rest
	}
	return words
}
