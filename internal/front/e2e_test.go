package front_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/testenv"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds what `make build` installs (paddock, paddock-full beside it, the small
// guest) and a hello-world program into one directory, once per test binary.
func binaries(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "paddock-front-")
		if buildErr != nil {
			return
		}
		build := exec.Command("go", "build", "-trimpath", "-o", binDir+"/",
			"github.com/paddockhq/paddock/cmd/paddock", "github.com/paddockhq/paddock/cmd/paddock-full",
			"github.com/paddockhq/paddock/cmd/paddock-guest", "./testdata/hello")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binDir
}

// home is one PADDOCK_HOME with a repository r and a bwrap sandbox r made from it.
type home struct {
	tb       testing.TB
	dir, bin string
	env      []string
}

func newHome(tb testing.TB) *home {
	tb.Helper()
	testenv.Program(tb, "bwrap", "apt-get install bubblewrap")
	bin := binaries(tb)
	// A short home keeps the socket's path within a unix socket's limit; as root,
	// sandboxes run as an unprivileged uid that must reach their directories.
	dir, err := os.MkdirTemp("", "pdk")
	if err != nil {
		tb.Fatal(err)
	}
	os.Chmod(dir, 0o711)
	h := &home{tb: tb, dir: dir, bin: bin}
	h.env = append(os.Environ(), "PADDOCK_HOME="+dir, "HOME="+filepath.Join(dir, "home"), "PADDOCK_CONTEXT=",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	tb.Cleanup(func() {
		h.run("paddock-full", "", "rm", "--force", "r")
		h.run("paddock-full", "", "daemon", "stop")
		os.RemoveAll(dir)
	})
	repo := filepath.Join(dir, "r")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Env = h.env
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if _, errOut, code := h.run("paddock", "", "up", repo); code != 0 {
		tb.Fatalf("paddock up: exit %d: %s", code, errOut)
	}
	return h
}

// run runs one of the built programs with stdin, returning its output and exit code.
func (h *home) run(prog, stdin string, args ...string) (string, string, int) {
	cmd := exec.Command(filepath.Join(h.bin, prog), args...)
	cmd.Env, cmd.Dir = h.env, h.dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		h.tb.Fatalf("%s %v: %v", prog, args, err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// TestFrontAnswersAsTheFullProgram: every command line gives the same output, errors and
// exit code through the lean front as through the full program, whether the front
// serves it or hands it over.
func TestFrontAnswersAsTheFullProgram(t *testing.T) {
	h := newHome(t)
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
	}{
		{"version", "", []string{"--version"}},
		{"version short", "", []string{"-v"}},
		{"exec streams and code", "", []string{"exec", "r", "--", "sh", "-c", "echo out; echo err >&2; exit 3"}},
		{"exec stdin", "hello\n", []string{"exec", "r", "cat"}},
		{"exec flags", "", []string{"exec", "-e", "A=1", "--env=B=2", "-w", "/tmp", "r", "--", "sh", "-c", "echo $A $B $PWD"}},
		{"exec with a terminal, none here", "", []string{"exec", "-t", "r", "--", "sh", "-c", "echo $TERM; stty size"}},
		{"exec in a sandbox that is not there", "", []string{"exec", "nosuch", "--", "true"}},
		{"exec of a command that is not there", "", []string{"exec", "r", "--", "no-such-command"}},
		{"exec usage", "", []string{"exec", "r"}},
		{"exec help", "", []string{"exec", "--help"}},
		{"a context that is not there", "", []string{"--context", "nope", "exec", "r", "true"}},
		{"ls", "", []string{"ls"}},
		{"ls json", "", []string{"ls", "--json"}},
		{"unknown command", "", []string{"version"}},
	} {
		fOut, fErr, fCode := h.run("paddock", tc.stdin, tc.args...)
		wOut, wErr, wCode := h.run("paddock-full", tc.stdin, tc.args...)
		// ls shows ages, which move on between the two runs.
		age := regexp.MustCompile(`\b[0-9]+s\b|"created_at": *"[^"]*"|"age[^,]*,`)
		fOut, wOut = age.ReplaceAllString(fOut, "AGE"), age.ReplaceAllString(wOut, "AGE")
		if fOut != wOut || fErr != wErr || fCode != wCode {
			t.Errorf("%s: paddock %q gave\n  %q %q exit %d\nthe full program\n  %q %q exit %d", tc.name, tc.args, fOut, fErr, fCode, wOut, wErr, wCode)
		}
	}
	// What the answers were, besides being the same.
	if out, _, code := h.run("paddock", "", "exec", "r", "--", "sh", "-c", "echo out; exit 3"); out != "out\n" || code != 3 {
		t.Errorf("exec: %q exit %d, want out and 3", out, code)
	}
	if out, _, _ := h.run("paddock", "", "exec", "-e", "A=1", "--env=B=2", "-w", "/tmp", "r", "--", "sh", "-c", "echo $A $B $PWD"); out != "1 2 /tmp\n" {
		t.Errorf("exec -e A=1 --env=B=2 -w /tmp: %q, want 1 2 /tmp", out)
	}
	if out, _, _ := h.run("paddock", "hello\n", "exec", "r", "cat"); out != "hello\n" {
		t.Errorf("exec cat: %q, want its stdin", out)
	}
	if _, errOut, code := h.run("paddock", "", "exec", "r", "--", "no-such-command"); code != 127 || !strings.Contains(errOut, "no-such-command") {
		t.Errorf("exec of no command: %q exit %d, want it named, exit 127", errOut, code)
	}
	if _, errOut, code := h.run("paddock", "", "exec", "nosuch", "true"); code != 125 || !strings.Contains(errOut, `no sandbox named "nosuch"`) || !strings.Contains(errOut, "hint: ") {
		t.Errorf("exec in no sandbox: %q exit %d, want the daemon's error with its hint, exit 125", errOut, code)
	}
	if out, _, _ := h.run("paddock", "", "exec", "-t", "r", "--", "sh", "-c", "echo $TERM; stty size"); out != "xterm-256color\r\n24 80\r\n" {
		t.Errorf("exec -t with no terminal here: %q, want xterm-256color and 24 80", out)
	}
}

// TestFrontHandsOver: what the front does not serve itself reaches the full program
// whole: a daemon to start, git's remote helper by its name, a context's token.
func TestFrontHandsOver(t *testing.T) {
	h := newHome(t)

	// No daemon: the full program starts it, and the command runs.
	if _, errOut, code := h.run("paddock", "", "daemon", "stop"); code != 0 {
		t.Fatalf("daemon stop: %d %s", code, errOut)
	}
	out, errOut, code := h.run("paddock", "", "exec", "r", "--", "echo", "back")
	if out != "back\n" || code != 0 || !strings.Contains(errOut, "started the daemon") {
		t.Errorf("exec with no daemon: %q %q exit %d, want the daemon started and the command run", out, errOut, code)
	}

	// git's remote helper, a link to paddock named git-remote-paddock.
	links := filepath.Join(h.dir, "links")
	os.Mkdir(links, 0o755)
	if err := os.Symlink(filepath.Join(h.bin, "paddock"), filepath.Join(links, "git-remote-paddock")); err != nil {
		t.Fatal(err)
	}
	git := exec.Command("git", "ls-remote", "paddock::r")
	git.Dir = filepath.Join(h.dir, "r")
	git.Env = append(h.env, "PATH="+links+":"+os.Getenv("PATH"))
	if out, err := git.CombinedOutput(); err != nil || !strings.Contains(string(out), "refs/heads/main") {
		t.Errorf("git ls-remote paddock::r through the front: %v\n%s", err, out)
	}

	// A context over HTTP on the loopback, with a token: the front's own requests carry it.
	web, errOut, code := h.run("paddock", "", "web", "--listen", "127.0.0.1:0")
	url := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+`).FindString(web)
	if code != 0 || url == "" {
		t.Fatalf("web: %q %q exit %d", web, errOut, code)
	}
	token, errOut, code := h.run("paddock", "", "token", "create", "--name", "front")
	if code != 0 {
		t.Fatalf("token create: %d %s", code, errOut)
	}
	tokenFile := filepath.Join(h.dir, "token")
	os.WriteFile(tokenFile, []byte(token), 0o600)
	if _, errOut, code := h.run("paddock", "", "context", "add", "loop", url, "--token-file", tokenFile); code != 0 {
		t.Fatalf("context add: %d %s", code, errOut)
	}
	if out, errOut, code := h.run("paddock", "", "--context", "loop", "exec", "r", "--", "echo", "via"); out != "via\n" || code != 0 {
		t.Errorf("exec through the context: %q %q exit %d", out, errOut, code)
	}
	os.WriteFile(tokenFile, []byte("pdk_not-a-token\n"), 0o600)
	if out, errOut, code := h.run("paddock", "", "--context", "loop", "exec", "r", "--", "echo", "via"); out != "" || code != 125 || !strings.Contains(errOut, "token") {
		t.Errorf("exec through the context with a token the daemon never made: %q %q exit %d, want it refused, saying why", out, errOut, code)
	}

	// The front alone, with no full program beside it: says what is missing.
	alone := filepath.Join(h.dir, "alone")
	os.Mkdir(alone, 0o755)
	data, err := os.ReadFile(filepath.Join(h.bin, "paddock"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(alone, "paddock"), data, 0o755)
	cmd := exec.Command(filepath.Join(alone, "paddock"), "ls")
	cmd.Env = h.env
	errBytes, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 5 || !strings.Contains(string(errBytes), "paddock-full is missing") || !strings.Contains(string(errBytes), "make build") {
		t.Errorf("the front with no full program beside it: %q exit %d", errBytes, cmd.ProcessState.ExitCode())
	}
}

// BenchmarkCLIStart measures what every command line pays before it does anything:
// `paddock --version` through the lean front against the same through the full program
// and against a hello-world Go program, and `paddock exec NAME -- true` through the
// daemon (bwrap) by the front against the full program, alternating in one run.
func BenchmarkCLIStart(b *testing.B) {
	h := newHome(b)
	timed := func(prog string, args ...string) time.Duration {
		cmd := exec.Command(filepath.Join(h.bin, prog), args...)
		cmd.Env = h.env
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v %s", prog, args, err, out)
		}
		return time.Since(start)
	}
	var version, fullVersion, hello, execFront, execFull time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		version += timed("paddock", "--version")
		fullVersion += timed("paddock-full", "--version")
		hello += timed("hello")
		execFront += timed("paddock", "exec", "r", "--", "true")
		execFull += timed("paddock-full", "exec", "r", "--", "true")
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(version), "version-ms")
	b.ReportMetric(ms(hello), "hello-ms")
	b.ReportMetric(float64(version)/float64(hello), "version-x-hello")
	b.ReportMetric(float64(fullVersion)/float64(hello), "full-version-x-hello")
	b.ReportMetric(ms(execFront), "exec-ms")
	b.ReportMetric(float64(execFront)/float64(execFull), "exec-x-full")
}
