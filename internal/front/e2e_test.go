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

	"github.com/paddockhq/paddock/internal/clitest"
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

func newHome(tb testing.TB) *home { return newHomeWith(tb, nil) }

// newHomeWith is newHome with fill run on the repository before the sandbox is made.
func newHomeWith(tb testing.TB, fill func(repo string)) *home {
	tb.Helper()
	testenv.Program(tb, "bwrap", "apt-get install bubblewrap")
	bin := binaries(tb)
	// The home's daemon is the built paddock-full's, torn down with its sandboxes at the end.
	ch := clitest.New(tb)
	ch.Executable = filepath.Join(bin, "paddock-full")
	dir := ch.Dir
	for k, v := range map[string]string{"HOME": filepath.Join(dir, "home"), "PADDOCK_CONTEXT": "", "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"} {
		ch.Setenv(k, v)
	}
	h := &home{tb: tb, dir: dir, bin: bin, env: ch.Environ()}
	repo := filepath.Join(dir, "r")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Env = h.env
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if fill != nil {
		fill(repo)
	}
	if _, errOut, code := h.run("paddock", "", "up", repo); code != 0 {
		tb.Fatalf("paddock up: exit %d: %s", code, errOut)
	}
	return h
}

// run runs one of the built programs with stdin, returning its output and exit code.
func (h *home) run(prog, stdin string, args ...string) (string, string, int) {
	return h.runIn(h.dir, prog, stdin, args...)
}

// runIn is run in the directory dir.
func (h *home) runIn(dir, prog, stdin string, args ...string) (string, string, int) {
	cmd := exec.Command(filepath.Join(h.bin, prog), args...)
	cmd.Env, cmd.Dir = h.env, dir
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
	t.Parallel()
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
	// shell is no exec for scripts: a sandbox not found exits 3, as everywhere else.
	if _, errOut, code := h.run("paddock", "", "shell", "nosuch"); code != 3 || !strings.Contains(errOut, `no sandbox named "nosuch"`) {
		t.Errorf("shell in no sandbox: %q exit %d, want the daemon's error, exit 3", errOut, code)
	}
	if out, _, _ := h.run("paddock", "", "exec", "-t", "r", "--", "sh", "-c", "echo $TERM; stty size"); out != "xterm-256color\r\n24 80\r\n" {
		t.Errorf("exec -t with no terminal here: %q, want xterm-256color and 24 80", out)
	}
}

// TestFrontHandsOver: what the front does not serve itself reaches the full program
// whole: a daemon to start, git's remote helper by its name, a context's token.
func TestFrontHandsOver(t *testing.T) {
	t.Parallel()
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
	// sync through the context fetches into the clone it runs in, the front as the full
	// program: none here, then the repository itself.
	if _, errOut, code := h.both(t, "sync through the context outside a clone", h.dir, nil, "--context", "loop", "sync", "r"); code != 2 || !strings.Contains(errOut, "sync fetches into the repository you run it in") {
		t.Errorf("sync through the context outside a clone: %q exit %d, want it said, exit 2", errOut, code)
	}
	if _, errOut, code := h.runIn(filepath.Join(h.dir, "r"), "paddock", "", "--context", "loop", "sync", "r"); code != 0 || !strings.Contains(errOut, "nothing new in r") && !strings.Contains(errOut, "to look:") {
		t.Errorf("sync through the context in the clone: %q exit %d", errOut, code)
	}
	os.WriteFile(tokenFile, []byte("pdk_not-a-token\n"), 0o600)
	if out, errOut, code := h.run("paddock", "", "--context", "loop", "exec", "r", "--", "echo", "via"); out != "" || code != 125 || !strings.Contains(errOut, "token") {
		t.Errorf("exec through the context with a token the daemon never made: %q %q exit %d, want it refused, saying why", out, errOut, code)
	}

	// The front alone, with no full program beside it: says what is missing.
	cmd := exec.Command(h.alone(""), "ls", "--json")
	cmd.Env = h.env
	errBytes, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 5 || !strings.Contains(string(errBytes), "paddock-full is missing") || !strings.Contains(string(errBytes), "make build") {
		t.Errorf("the front with no full program beside it: %q exit %d", errBytes, cmd.ProcessState.ExitCode())
	}
}

// git runs git in the home's repository r.
func (h *home) git(args ...string) string {
	h.tb.Helper()
	cmd := exec.Command("git", append([]string{"-C", filepath.Join(h.dir, "r")}, args...)...)
	cmd.Env = h.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.tb.Fatalf("git %v: %v %s", args, err, out)
	}
	return string(out)
}

// forget deletes the refs a sync of r wrote in the host repository, so that the next
// sync fetches the same work anew.
func (h *home) forget() {
	h.tb.Helper()
	for _, ref := range strings.Fields(h.git("for-each-ref", "--format=%(refname)", "refs/paddock/r/")) {
		h.git("update-ref", "-d", ref)
	}
}

// both runs a command line in dir through the front and through the full program, with
// prepare (when not nil) before each, and reports any difference in their output,
// errors or exit code; it returns the front's.
func (h *home) both(t *testing.T, what, dir string, prepare func(), args ...string) (string, string, int) {
	t.Helper()
	if prepare != nil {
		prepare()
	}
	fOut, fErr, fCode := h.runIn(dir, "paddock", "", args...)
	if prepare != nil {
		prepare()
	}
	wOut, wErr, wCode := h.runIn(dir, "paddock-full", "", args...)
	if fOut != wOut || fErr != wErr || fCode != wCode {
		t.Errorf("%s: paddock %q gave\n  %q %q exit %d\nthe full program\n  %q %q exit %d", what, args, fOut, fErr, fCode, wOut, wErr, wCode)
	}
	return fOut, fErr, fCode
}

// alone copies the front into a directory of its own and returns its path there: beside
// it, a paddock-full that is fullScript, or none when that is empty.
func (h *home) alone(fullScript string) string {
	h.tb.Helper()
	dir := filepath.Join(h.dir, "alone")
	os.Mkdir(dir, 0o755)
	data, err := os.ReadFile(filepath.Join(h.bin, "paddock"))
	if err != nil {
		h.tb.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "paddock"), data, 0o755)
	if fullScript != "" {
		os.WriteFile(filepath.Join(dir, "paddock-full"), []byte(fullScript), 0o755)
	}
	return filepath.Join(dir, "paddock")
}

// TestFrontSync: `paddock sync NAME`, served by the front, fetches the agent's work and
// says what arrived, warns of files that run code on the host, records the sync, and
// fails as the full program does; with no daemon it hands over, and the daemon is
// started. Each answer is compared with the full program's for the same work.
func TestFrontSync(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	commit := `printf 'all:\n\ttrue\n' > Makefile && echo a > a.txt && git add -A && git -c user.name=t -c user.email=t@example.com commit -q -m "add a"`
	if _, errOut, code := h.run("paddock-full", "", "exec", "r", "--", "sh", "-c", commit); code != 0 {
		t.Fatalf("commit in the sandbox: %d %s", code, errOut)
	}
	same := func(what string, args ...string) (string, string, int) {
		t.Helper()
		return h.both(t, what, h.dir, h.forget, args...)
	}
	out, errOut, code := same("a new commit", "sync", "r")
	if code != 0 || !strings.Contains(out, "refs/paddock/r/main (new): 1 commit(s), 2 file(s)") || !strings.Contains(out, "add a") ||
		!strings.Contains(out, "A\ta.txt") || !strings.Contains(errOut, "run code on this machine") || !strings.Contains(errOut, "Makefile") ||
		!strings.Contains(errOut, "git merge refs/paddock/r/main") {
		t.Errorf("sync of a new commit: %q %q exit %d, want the commit, its files, the Makefile warned of and how to merge", out, errOut, code)
	}
	// Served by the front itself: beside a full program that only says it was run.
	alone := h.alone("#!/bin/sh\necho handed over >&2; exit 99\n")
	h.forget()
	cmd := exec.Command(alone, "sync", "r")
	cmd.Env, cmd.Dir = h.env, h.dir
	if aOut, err := cmd.Output(); err != nil || string(aOut) != out {
		t.Errorf("sync by the front alone: %q %v, want %q", aOut, err, out)
	}
	main := strings.TrimSpace(h.git("rev-parse", "refs/paddock/r/main"))
	if got := strings.TrimSpace(h.git("log", "-1", "--format=%s", main)); got != "add a" {
		t.Errorf("refs/paddock/r/main is %q, want the sandbox's commit", got)
	}
	if out, _, code := same("json", "sync", "--json", "r"); code != 0 || !strings.Contains(out, `"ref": "refs/paddock/r/main"`) || !strings.Contains(out, `"runs_on_host": [`) {
		t.Errorf("sync --json: %q exit %d", out, code)
	}
	if _, errOut, code := h.run("paddock", "", "sync", "r"); code != 0 || errOut != "paddock: nothing new in r\n" {
		t.Errorf("a second sync: %q exit %d, want nothing new", errOut, code)
	}
	// A diff fetches into the same refs, but the front's next sync still reports what it brought.
	if _, errOut, code := h.run("paddock-full", "", "exec", "r", "--", "sh", "-c", "echo b > b.txt"); code != 0 {
		t.Fatalf("an edit in the sandbox: %d %s", code, errOut)
	}
	if out, _, code := h.run("paddock", "", "diff", "r"); code != 0 || !strings.Contains(out, "+++ b/b.txt") {
		t.Errorf("diff of an edit: %q exit %d", out, code)
	}
	if out, _, code := h.run("paddock", "", "sync", "r"); code != 0 || !strings.Contains(out, "refs/paddock/r/wip (updated): 1 commit(s), 1 file(s)") || !strings.Contains(out, "A\tb.txt") {
		t.Errorf("sync after a diff: %q exit %d, want the uncommitted work reported", out, code)
	}
	h.run("paddock-full", "", "exec", "r", "--", "rm", "b.txt")
	if _, errOut, code := same("no such sandbox", "sync", "nosuch"); code != 3 || !strings.Contains(errOut, `no sandbox named "nosuch"`) {
		t.Errorf("sync of no sandbox: %q exit %d, want not found, exit 3", errOut, code)
	}
	// Every sync above was recorded with the daemon, the front's as the full program's.
	if out, _, _ := h.run("paddock", "", "sync", "r", "--history"); strings.Count(out, "\n") != 7 {
		t.Errorf("sync --history after seven syncs:\n%s", out)
	}

	// No name: the sandbox made from the repository the command runs in, found by the
	// front itself (below a subdirectory too), or by the full program when the front
	// cannot tell: none made from here, or several.
	repo := filepath.Join(h.dir, "r")
	sub := filepath.Join(repo, "sub")
	os.Mkdir(sub, 0o755)
	h.forget()
	cmd = exec.Command(alone, "sync")
	cmd.Env, cmd.Dir = h.env, sub
	if aOut, err := cmd.Output(); err != nil || string(aOut) != out {
		t.Errorf("sync with no name by the front alone, in the repository: %q %v, want %q", aOut, err, out)
	}
	elsewhere := filepath.Join(h.dir, "elsewhere")
	h.git("init", "-q", elsewhere)
	if _, errOut, code := h.both(t, "sync with no name where no sandbox was made", elsewhere, nil, "sync"); code != 3 || !strings.Contains(errOut, "no sandbox was made from") {
		t.Errorf("sync with no name where no sandbox was made: %q exit %d, want it said, exit 3", errOut, code)
	}
	if _, errOut, code := h.both(t, "sync with no name inside .git", filepath.Join(repo, ".git"), nil, "sync"); code != 2 {
		t.Errorf("sync with no name inside .git: %q exit %d, want exit 2", errOut, code)
	}
	if _, errOut, code := h.run("paddock-full", "", "up", repo, "--name", "r2"); code != 0 {
		t.Fatalf("a second sandbox of the repository: %d %s", code, errOut)
	}
	if _, errOut, code := h.both(t, "sync with no name where two sandboxes were made", repo, nil, "sync"); code != 2 || !strings.Contains(errOut, "r, r2") {
		t.Errorf("sync with no name where two sandboxes were made: %q exit %d, want both named, exit 2", errOut, code)
	}
	h.run("paddock-full", "", "rm", "--force", "r2")

	// The host repository moved away: said, exit 3, nothing fetched.
	h.forget()
	if err := os.Rename(repo, repo+".moved"); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := h.run("paddock", "", "sync", "r"); code != 3 || !strings.Contains(errOut, "has moved or was deleted") {
		t.Errorf("sync with the host repository moved: %q exit %d, want it said, exit 3", errOut, code)
	}
	os.Rename(repo+".moved", repo)

	// No daemon: handed over, the daemon started, the work fetched.
	if _, errOut, code := h.run("paddock", "", "daemon", "stop"); code != 0 {
		t.Fatalf("daemon stop: %d %s", code, errOut)
	}
	out, errOut, code = h.run("paddock", "", "sync", "r")
	if code != 0 || !strings.Contains(errOut, "started the daemon") || !strings.Contains(out, "refs/paddock/r/main (new)") {
		t.Errorf("sync with no daemon: %q %q exit %d, want the daemon started and the work fetched", out, errOut, code)
	}
}

// BenchmarkCLISync: `paddock sync NAME` as the user runs it, a whole process (the front),
// of one new commit touching 20 files in a repository of 1000 commits, against `git
// fetch` of the same kind of commit from a local file:// clone, also a whole process, in
// the same run; and the same sync by the full program. BenchmarkSync (internal/cli)
// times the sync inside one process, without any program's start.
func BenchmarkCLISync(b *testing.B) {
	h := newHomeWith(b, func(repo string) { testenv.History(b, repo, 1000) })
	repo := filepath.Join(h.dir, "r")
	upstream := filepath.Join(h.dir, "upstream")
	run := func(dir string, args ...string) time.Duration {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env, cmd.Dir = h.env, dir
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v %s", args, err, out)
		}
		return time.Since(start)
	}
	paddock := filepath.Join(h.bin, "paddock")
	run(h.dir, "git", "clone", "-q", "file://"+repo, upstream)
	run(repo, paddock, "sync", "r")
	fetch := []string{"git", "fetch", "-q", "file://" + upstream, "main:refs/baseline/main"}
	run(repo, fetch...)
	var front, full, base time.Duration
	change := 0
	commit := func() {
		change++
		run(h.dir, paddock, "exec", "r", "--", "sh", "-c", testenv.Touch20, "sh", fmt.Sprint(change))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		commit()
		run(upstream, "sh", "-c", testenv.Touch20, "sh", fmt.Sprint(i))
		b.StartTimer()
		front += run(repo, paddock, "sync", "r")
		base += run(repo, fetch...)
		b.StopTimer()
		commit()
		b.StartTimer()
		full += run(repo, filepath.Join(h.bin, "paddock-full"), "sync", "r")
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(front), "sync-ms")
	b.ReportMetric(ms(base), "fetch-ms")
	b.ReportMetric(float64(front)/float64(base), "x-fetch")
	b.ReportMetric(float64(full)/float64(base), "full-x-fetch")
}

// BenchmarkCLIStart measures what every command line pays before it does anything:
// `paddock --version` through the lean front against the same through the full program
// and against a hello-world Go program, and `paddock exec NAME -- true` through the
// daemon (bwrap) and `paddock ls` (one sandbox) by the front against the full program,
// alternating in one run.
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
	var version, fullVersion, hello, execFront, execFull, lsFront, lsFull time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		version += timed("paddock", "--version")
		fullVersion += timed("paddock-full", "--version")
		hello += timed("hello")
		execFront += timed("paddock", "exec", "r", "--", "true")
		execFull += timed("paddock-full", "exec", "r", "--", "true")
		lsFront += timed("paddock", "ls")
		lsFull += timed("paddock-full", "ls")
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(version), "version-ms")
	b.ReportMetric(ms(hello), "hello-ms")
	b.ReportMetric(float64(version)/float64(hello), "version-x-hello")
	b.ReportMetric(float64(fullVersion)/float64(hello), "full-version-x-hello")
	b.ReportMetric(ms(execFront), "exec-ms")
	b.ReportMetric(float64(execFront)/float64(execFull), "exec-x-full")
	b.ReportMetric(ms(lsFront), "ls-ms")
	b.ReportMetric(float64(lsFront)/float64(lsFull), "ls-x-full")
}

// TestFrontLs: `paddock ls`, served by the front, prints what the full program prints: a
// running sandbox with a session under it, then a stopped one; with no sandbox, what to
// run; the copy of the front alone (beside a full program that only fails) serves it.
func TestFrontLs(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	if _, errOut, code := h.run("paddock-full", "", "chat", "r", "--new", "worker", "--agent", "shell", "--command", "while :; do sleep 1; done"); code != 0 {
		t.Fatalf("start a session: %d %s", code, errOut)
	}
	// What two runs a moment apart may tell apart is not the front's doing: the AGE column
	// counts seconds, and a session's state read slowly on a loaded machine is given as
	// last known (and the columns widen for it). Those are compared without.
	moment := regexp.MustCompile(`\b\d+[smhd]\b| \(last known\)`)
	spaces := regexp.MustCompile(` +`)
	norm := func(s string) string { return spaces.ReplaceAllString(moment.ReplaceAllString(s, ""), " ") }
	same := func(what string) string {
		t.Helper()
		for range 3 {
			fOut, fErr, fCode := h.runIn(h.dir, "paddock", "", "ls")
			wOut, wErr, wCode := h.runIn(h.dir, "paddock-full", "", "ls")
			if norm(fOut) == norm(wOut) && fErr == wErr && fCode == wCode {
				return fOut + fErr
			}
			t.Logf("%s: the front gave %q %q exit %d, the full program %q %q exit %d", what, fOut, fErr, fCode, wOut, wErr, wCode)
		}
		t.Fatalf("%s: the front's ls differs from the full program's", what)
		return ""
	}
	out := same("a running sandbox with a session")
	// ls answers at once with a session's state as last read when reading it now is slow
	// (a loaded machine), and says so, as lifecycle.txtar takes too.
	if !regexp.MustCompile(`(?m)^r +bwrap +running +closed +\d+s +-\n  r/worker +shell +running( \(last known\))? +-$`).MatchString(out) {
		t.Fatalf("ls:\n%s", out)
	}
	alone := h.alone("#!/bin/sh\nexit 99\n")
	cmd := exec.Command(alone, "ls")
	cmd.Env = h.env
	if got, err := cmd.Output(); err != nil || !strings.HasPrefix(string(got), "NAME ") {
		t.Fatalf("the front alone: %v %q", err, got)
	}
	if _, errOut, code := h.run("paddock-full", "", "stop", "r"); code != 0 {
		t.Fatalf("stop: %d %s", code, errOut)
	}
	// A stopped sandbox's sessions are listed as stopped (start brings them back).
	if out := same("a stopped sandbox"); !regexp.MustCompile(`(?m)^r +bwrap +stopped .*\n  r/worker +shell +stopped `).MatchString(out) {
		t.Fatalf("ls of a stopped sandbox:\n%s", out)
	}
	if _, errOut, code := h.run("paddock-full", "", "rm", "--force", "r"); code != 0 {
		t.Fatalf("rm: %d %s", code, errOut)
	}
	if out := same("no sandbox"); !strings.Contains(out, "no sandboxes yet") {
		t.Fatalf("ls with no sandbox: %q", out)
	}
	// No daemon: handed over, and the full program starts it.
	if _, errOut, code := h.run("paddock-full", "", "daemon", "stop"); code != 0 {
		t.Fatalf("daemon stop: %d %s", code, errOut)
	}
	if _, errOut, code := h.run("paddock", "", "ls"); code != 0 || !strings.Contains(errOut, "started the daemon") || !strings.Contains(errOut, "no sandboxes yet") {
		t.Fatalf("ls with no daemon: %q exit %d, want the daemon started", errOut, code)
	}
}
