// Package hostgit holds the checks of paddock's host-side git paths that `paddock verify`
// runs with no sandbox: a scratch repository stands for a sandbox's workspace, with a
// program planted in every place git could be made to run one (hooks, core.fsmonitor,
// clean and smudge filters, a diff driver's textconv, a merge driver, an include that
// adds more), and the host repository's sync (fetch), diff and merge are run on it by the
// same functions the commands call. The planted programs write where they ran: inside
// the "sandbox" (its commands, which in a real sandbox run inside it) is expected; any run
// by host git is a failure.
package hostgit

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/backend/conform"
	"github.com/paddockhq/paddock/internal/gitsync"
)

// sideEnv marks a process started as the sandbox's: a planted program that sees it ran
// inside, where it may.
const sideEnv = "PADDOCK_VERIFY_SIDE"

// Suite runs the host git checks, each a part of t named as the report lists it.
func Suite(t conform.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("no git on this host: %v", err)
	}
	s := newScene(t)
	t.Run("HostGitSync", func(t conform.T) { s.sync(t) })
	t.Run("HostGitDiff", func(t conform.T) { s.diff(t) })
	t.Run("HostGitMerge", func(t conform.T) { s.merge(t) })
}

// scene is a host repository and a sandbox's workspace cloned from it, both armed.
type scene struct {
	dir, host, ws, trap, log string
	base                     string
	g                        *gitsync.Git
	synced                   bool
}

const sandboxName = "verify"

func newScene(t conform.T) *scene {
	dir, err := os.MkdirTemp("", "pdkgit")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &scene{dir: dir, host: filepath.Join(dir, "host"), ws: filepath.Join(dir, "workspace"),
		trap: filepath.Join(dir, "trap"), log: filepath.Join(dir, "ran")}
	// The planted program: it says what it was planted as and on which side it ran.
	script := "#!/bin/sh\necho \"$1 ${" + sideEnv + ":-host}\" >> '" + s.log + "'\ncat 2>/dev/null\nexit 0\n"
	if err := os.WriteFile(s.trap, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", sideEnv+"=setup",
			"GIT_AUTHOR_NAME=verify", "GIT_AUTHOR_EMAIL=verify@paddock.invalid",
			"GIT_COMMITTER_NAME=verify", "GIT_COMMITTER_EMAIL=verify@paddock.invalid")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	// The user's repository, as `paddock up` finds it: one commit on main.
	git(dir, "init", "-q", "-b", "main", s.host)
	write(t, filepath.Join(s.host, "README"), "hello\n")
	git(s.host, "add", "README")
	git(s.host, "commit", "-q", "-m", "start")
	s.base = git(s.host, "rev-parse", "HEAD")
	// The sandbox's workspace, cloned from it, where the agent does as it likes: config
	// that names the planted program for everything git could run, hooks, and work that
	// names drivers in .gitattributes, committed on a branch and left uncommitted too.
	git(dir, "clone", "-q", s.host, s.ws)
	arm(t, s.ws, s.trap, "sandbox")
	write(t, filepath.Join(s.ws, ".git", "extra.config"), "[core]\n\tfsmonitor = "+s.trap+" include-fsmonitor\n[diff \"planted\"]\n\ttextconv = "+s.trap+" include-textconv\n")
	git(s.ws, "config", "include.path", filepath.Join(s.ws, ".git", "extra.config"))
	git(s.ws, "switch", "-q", "-c", "work")
	write(t, filepath.Join(s.ws, ".gitattributes"), "* filter=planted diff=planted merge=planted\n")
	write(t, filepath.Join(s.ws, "code.txt"), "the agent's work\n")
	git(s.ws, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "add", "-A")
	git(s.ws, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "filter.planted.clean=cat", "commit", "-q", "-m", "work")
	write(t, filepath.Join(s.ws, "code.txt"), "the agent's work, more of it\n")
	// The host repository's own config names the same drivers (as a user's may: git-lfs
	// is a filter), and its hooks are armed too: paddock runs none of them.
	arm(t, s.host, s.trap, "host")
	os.Remove(s.log) // what setting up ran is not a finding
	s.g = &gitsync.Git{Repo: s.host, Notes: io.Discard}
	return s
}

// arm plants the program in dir's repository: hooks, fsmonitor, filters, drivers.
func arm(t conform.T, dir, trap, side string) {
	t.Helper()
	hooks := filepath.Join(dir, ".git", "hooks")
	for _, h := range []string{"pre-commit", "post-commit", "post-checkout", "post-merge", "pre-merge-commit",
		"commit-msg", "prepare-commit-msg", "reference-transaction", "pre-auto-gc", "post-rewrite",
		"fsmonitor-watchman", "pre-push", "post-index-change"} {
		write(t, filepath.Join(hooks, h), "#!/bin/sh\nexec '"+trap+"' "+side+"-hook-"+h+"\n")
		os.Chmod(filepath.Join(hooks, h), 0o755)
	}
	cfg := filepath.Join(dir, ".git", "config")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "[core]\n\tfsmonitor = %[1]s %[2]s-fsmonitor\n\tpager = %[1]s %[2]s-pager\n"+
		"[filter \"planted\"]\n\tclean = %[1]s %[2]s-clean\n\tsmudge = %[1]s %[2]s-smudge\n\tprocess = %[1]s %[2]s-process\n"+
		"[diff \"planted\"]\n\ttextconv = %[1]s %[2]s-textconv\n\tcommand = %[1]s %[2]s-diff\n"+
		"[merge \"planted\"]\n\tdriver = %[1]s %[2]s-merge\n"+
		"[diff]\n\texternal = %[1]s %[2]s-external-diff\n", trap, side)
}

func write(t conform.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stream is the sandbox: it runs the commands a sync sends in the workspace, marked
// as the sandbox's.
func (s *scene) stream(ctx context.Context, argv, env []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = s.ws
	cmd.Env = append(append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", sideEnv+"=sandbox"), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), nil
	}
	return 0, err
}

// hostRuns are the planted programs host git ran since the last look.
func (s *scene) hostRuns(t conform.T) []string {
	data, err := os.ReadFile(s.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	os.Remove(s.log)
	var host []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if what, side, ok := strings.Cut(l, " "); ok && side != "sandbox" {
			host = append(host, what)
		}
	}
	return host
}

func (s *scene) check(t conform.T, what string) {
	t.Helper()
	if ran := s.hostRuns(t); len(ran) > 0 {
		t.Errorf("host git ran planted programs during %s: %s", what, strings.Join(ran, ", "))
	}
}

func ctxOf(t conform.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// sync fetches the sandbox's work as `paddock sync` does (Sync), then as diff does (Fetch).
func (s *scene) sync(t conform.T) {
	ctx := ctxOf(t)
	res, err := s.g.Sync(ctx, sandboxName, s.base, s.ws, s.stream)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if len(res.Updates) == 0 {
		t.Fatalf("sync fetched nothing: the check proves nothing")
	}
	s.synced = true
	s.check(t, "sync")
	write(t, filepath.Join(s.ws, "code.txt"), "the agent's work, and again\n")
	if _, err := s.g.Fetch(ctx, sandboxName, s.base, s.ws, s.stream); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	s.check(t, "the fetch of diff")
}

// diff runs `paddock diff`'s git diff, whole and --stat.
func (s *scene) diff(t conform.T) {
	if !s.synced {
		t.Skip("sync did not run")
	}
	ctx := ctxOf(t)
	for _, stat := range []bool{false, true} {
		var out strings.Builder
		if err := s.g.RunTo(ctx, &out, gitsync.DiffArgs(sandboxName, s.base, stat)...); err != nil {
			t.Fatalf("diff: %v", err)
		}
		if !strings.Contains(out.String(), "code.txt") {
			t.Fatalf("the diff lacks the sandbox's work: %q", out.String())
		}
	}
	s.check(t, "diff")
}

// merge plans and makes the merge `paddock merge` does of the sandbox's branch. A merge
// refused because the work names a driver the host defines is safe too: only what ran
// counts.
func (s *scene) merge(t conform.T) {
	if !s.synced {
		t.Skip("sync did not run")
	}
	ctx := ctxOf(t)
	req := gitsync.MergeRequest{Sandbox: sandboxName, Base: s.base, Current: "work", WIP: true}
	plan, err := s.g.PlanMerge(ctx, req)
	if err == nil {
		_, err = s.g.Merge(ctx, plan, false)
	}
	if err != nil {
		t.Logf("with the drivers defined on the host, the merge was refused: %v", firstLine(err.Error()))
	}
	s.check(t, "a merge of work naming drivers the host defines")
	// Without them, the merge goes through, with the host's hooks and fsmonitor armed.
	for _, section := range []string{"filter.planted", "diff.planted", "merge.planted"} {
		if _, err := s.g.Run(ctx, "config", "--remove-section", section); err != nil {
			t.Fatal(err)
		}
	}
	if plan, err = s.g.PlanMerge(ctx, req); err != nil {
		t.Fatalf("plan the merge: %v", err)
	}
	if _, err := s.g.Merge(ctx, plan, false); err != nil {
		t.Fatalf("merge: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.host, "code.txt")); err != nil {
		t.Fatalf("the merge did not bring the sandbox's work: %v", err)
	}
	s.check(t, "merge")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
