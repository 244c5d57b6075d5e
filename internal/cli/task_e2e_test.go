package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/clitest"
	"github.com/paddockhq/paddock/internal/github/githubtest"
	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/task"
	"github.com/paddockhq/paddock/internal/testenv"
)

// The task of TestTaskEndToEnd: one prompt whose command does something else in each
// attempt, told apart by the attempt's branch (task/greet/N): attempt 1 makes the
// greeting a hello and adds a git hook; attempt 2 makes it a goodbye, which the check
// refuses; attempt 3 makes it another hello, with notes, which passes alone and
// conflicts with attempt 1's once that has landed.
const (
	// greetPrompt is the task's prompt. Its last word, $b", is one Codex's composer
	// would take for a skill's name to complete, were it typed without a space after.
	greetPrompt = "Make the greeting a hello.\nRUN: " + greetCommand
	// A check a user would write: greeting.txt must say hello.
	greetCheck   = "sh check.sh"
	greetCommand = `b=$(git branch --show-current); case "$b" in ` +
		`*1) printf 'hello, world\n' > greeting.txt; mkdir -p .githooks; printf '#!/bin/sh\ntouch hook-ran\n' > .githooks/post-merge; chmod +x .githooks/post-merge;; ` +
		`*2) printf 'goodbye\n' > greeting.txt;; ` +
		`*) printf 'hello, there\n' > greeting.txt; seq 1 10 > notes.txt;; ` +
		`esac; git add -A && git commit -qm "greeting of $b"`
	// prCommand is the attempt of the task landed as a pull request: a shell command.
	prCommand = `printf 'hello, pull request\n' > greeting.txt && git commit -qam 'greeting for a pull request'`
	// reviewMarker is in the review of attempt 2 as its agent gets it; reviewCommand is
	// what the agent does then: a hello, with more lines than the others' work.
	reviewMarker  = "greeting.txt line 1: say hello, not goodbye"
	reviewCommand = `printf 'hello from a review\n' > greeting.txt && seq 1 20 > review-notes.txt && git add -A && git commit -qm 'greeting after its review'`
	// conflictMarker is in the queue's message to attempt 3's agent once its rebase
	// onto main, where attempt 1 landed, conflicted.
	conflictMarker = "conflicts in greeting.txt"
	// resolveCommand is what that agent does when told: rebase onto the branch as the
	// message says it is (paddock/onto), keep both greetings, go on. It takes a few
	// seconds, as an agent's answer does, so that the landing's --wait sees the conflict.
	resolveCommand = `sleep 4; git rebase paddock/onto; printf 'hello, world and there\n' > greeting.txt; git add greeting.txt && GIT_EDITOR=true git rebase --continue`
)

// TestTaskEndToEnd runs a task for real: two Claude Code attempts and one Codex attempt
// (the second Claude one on docker when it is up) against scripted model servers, the
// check run in each attempt's sandbox, Claude Code judging each; the ranking a user
// reads; a review on the failing attempt's diff, which its agent answers and the check
// then passes; the best attempt landed into the host repository through the merge queue
// (its git hook warned of, and never run); the Codex attempt landed after it through a
// conflict its agent resolves when the queue tells it, the daemon killed meanwhile; and
// another task's attempt opened as a pull request on a fake of GitHub.
func TestTaskEndToEnd(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "claude")
	modeltest.RequireCLI(t, "codex")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	claude := modeltest.NewAnthropic(t)
	codex := modeltest.NewOpenAIResponses(t)
	codex.RunOn(conflictMarker, resolveCommand)
	// The judge (Claude Code) scores each attempt by the greeting its diff adds.
	for _, v := range [][2]string{
		{"+hello, world and there", "SCORE: 7/10 — keeps both greetings"},
		{"+hello, world", "SCORE: 9/10 — says hello to the world"},
		{"+hello, there", "SCORE: 6/10 — says hello, with notes nobody asked for"},
		{"+goodbye", "SCORE: 1/10 — says goodbye"},
		{"+hello from a review", "SCORE: 4/10 — says hello after a review"},
		{task.JudgeIntro, "SCORE: 5/10 — unremarkable"},
	} {
		claude.ReplyOn(v[0], v[1])
	}
	h, repo := e2eHome(t)
	h.Setenv("ANTHROPIC_BASE_URL", claude.URL())
	h.Setenv("ANTHROPIC_API_KEY", "sk-ant-task-REAL-0123456789abcdefghijklmnop")
	h.Setenv("OPENAI_BASE_URL", codex.URL()+"/v1")
	h.Setenv("OPENAI_API_KEY", "sk-openai-task-REAL-0123456789abcdef")
	// A fake of GitHub, where the repository's origin is, and the token the daemon opens
	// pull requests with.
	gh := githubtest.New(t)
	// The daemon takes the token from its environment and GitHub's address from the
	// config (a GitHub Enterprise server's, as the fake is), trusting the fake's
	// certificate as it would a private server's (PADDOCK_GITHUB_CA_FILE).
	h.Setenv("GH_TOKEN", "")
	h.Setenv("GITHUB_TOKEN", gh.Token)
	h.Setenv("PADDOCK_GITHUB_CA_FILE", gh.CAFile)
	writeHostFile(t, filepath.Join(h.Dir, "config.toml"), fmt.Sprintf("[auth.github]\napi_url = %q\n", gh.URL))
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)

	// The host repository: a greeting, the check, and git hooks the user keeps in
	// .githooks (core.hooksPath), as husky and others set up.
	writeHostFile(t, filepath.Join(repo, "greeting.txt"), "hi\n")
	writeHostFile(t, filepath.Join(repo, "check.sh"), "grep -q '^hello' greeting.txt && echo 'greeting ok' && exit 0\necho \"greeting is not a hello: $(cat greeting.txt)\"\nexit 1\n")
	hostGit(t, repo, "add", "-A")
	hostGit(t, repo, "commit", "-qm", "a greeting and its check")
	hostGit(t, repo, "config", "core.hooksPath", ".githooks")
	base := hostGit(t, repo, "rev-parse", "HEAD")
	hostGit(t, repo, "push", "-q", gh.AddRepo(t, "acme", "greet"), "main")
	hostGit(t, repo, "remote", "add", "origin", gh.RemoteURL("acme", "greet"))

	agents, second := "claude:2,codex", "bwrap"
	if dockerReady() {
		agents, second = "claude,claude@docker,codex", "docker"
	}
	began := time.Now()
	name := strings.TrimSpace(must("", "task", "new", repo, "--name", "greet", "--prompt", greetPrompt, "--agents", agents, "--check", greetCheck, "--judge", "claude"))
	if name != "greet" {
		t.Fatalf("task new printed %q, want the task's name", name)
	}
	// Another task beside it, whose one attempt (a shell command) becomes a pull request.
	must("", "task", "new", repo, "--name", "pr", "--prompt", prCommand, "--agents", "shell", "--check", greetCheck)
	show := func(name string) wire.Task {
		var tk wire.Task
		if err := json.Unmarshal([]byte(must("", "task", "show", name, "--json")), &tk); err != nil {
			t.Fatalf("task show %s --json: %v", name, err)
		}
		return tk
	}
	defer func() {
		if t.Failed() {
			out, _, _ := paddock("", "task", "show", "greet")
			q, _, _ := paddock("", "task", "queue", "--json")
			t.Logf("task show greet:\n%s\nqueue:\n%s\nmodel requests: claude %d, codex %d", out, q, len(claude.Requests()), len(codex.Requests()))
		}
	}()
	var tk wire.Task
	waitUntil(t, 5*time.Minute, "every attempt done and judged", func() bool {
		tk = show("greet")
		judged := true
		for _, a := range tk.Attempts {
			judged = judged && a.Verdict != nil
		}
		return tk.State == wire.TaskDone && judged
	})
	t.Logf("three attempts started, worked, checked and judged in %v", time.Since(began).Round(time.Second))

	// The ranking as a user reads it: the Claude attempt whose check passes first, the
	// Codex one (passing too, with a bigger diff) second, the one whose check fails last,
	// each saying why.
	if len(tk.Attempts) != 3 {
		t.Fatalf("task greet has %d attempts, want 3", len(tk.Attempts))
	}
	first, mid, last := tk.Attempts[0], tk.Attempts[1], tk.Attempts[2]
	if first.N != 1 || first.Agent != "claude" || first.Rank != 1 || first.Passed == nil || !*first.Passed {
		t.Errorf("first: attempt %d (%s), rank %d, passed %v; want attempt 1 (claude), passing", first.N, first.Agent, first.Rank, first.Passed)
	}
	if mid.N != 3 || mid.Agent != "codex" || mid.Passed == nil || !*mid.Passed {
		t.Errorf("second: attempt %d (%s), passed %v; want attempt 3 (codex), passing", mid.N, mid.Agent, mid.Passed)
	}
	if last.N != 2 || last.Backend != second || last.Passed == nil || *last.Passed {
		t.Errorf("last: attempt %d on %s, passed %v; want attempt 2 on %s, failing", last.N, last.Backend, last.Passed, second)
	}
	if !strings.Contains(first.Why, "pass") || !strings.Contains(first.Why, "judge 9/10") || !strings.Contains(last.Why, "fail") {
		t.Errorf("Why: first %q, last %q", first.Why, last.Why)
	}
	for _, a := range tk.Attempts {
		want := map[int]int{1: 9, 2: 1, 3: 6}[a.N]
		if a.Verdict.Judge != "claude" || a.Verdict.Score != want || a.Verdict.Error != "" {
			t.Errorf("attempt %d's verdict: %+v, want claude's %d/10", a.N, a.Verdict, want)
		}
	}
	if len(last.Checks) != 1 || last.Checks[0].Exit == 0 || !strings.Contains(last.Checks[0].Output, "greeting is not a hello: goodbye") {
		t.Errorf("the failing attempt's check: %+v", last.Checks)
	}
	for _, a := range tk.Attempts {
		if a.Usage.CostUSD <= 0 || a.Usage.Requests == 0 {
			t.Errorf("attempt %d (%s): no cost recorded: %+v", a.N, a.Agent, a.Usage)
		}
		if a.Diff.Files == 0 || a.Head == "" || a.Dirty {
			t.Errorf("attempt %d: diff %+v, head %q, dirty %v: its commit not seen", a.N, a.Diff, a.Head, a.Dirty)
		}
	}
	// The agents' and the judge's keys never entered a sandbox.
	for _, a := range tk.Attempts {
		out := must("", "exec", a.Sandbox, "--", "sh", "-c",
			"cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c 'task-REA[L]' ; grep -rl 'task-REA[L]' /home/agent /workspace /tmp 2>/dev/null | wc -l")
		if f := strings.Fields(out); len(f) != 2 || f[0] != "0" || f[1] != "0" {
			t.Errorf("a real key is in sandbox %s (%s): %q", a.Sandbox, a.Backend, out)
		}
	}
	text := must("", "task", "show", "greet")
	for _, want := range []string{"greeting is not a hello: goodbye", "paddock task land greet"} {
		if !strings.Contains(text, want) {
			t.Errorf("task show greet lacks %q:\n%s", want, text)
		}
	}

	// A review on a line of the failing attempt's diff goes to its agent as its next
	// message; the agent's answer, a new commit, is checked again: now it passes, and
	// its place says so.
	claude.RunOn(reviewMarker, reviewCommand)
	must("", "task", "review", "greet/2", "--file", "greeting.txt", "--line", "1", "say hello, not goodbye")
	waitUntil(t, 2*time.Minute, "attempt 2 checked again after its review", func() bool {
		tk = show("greet")
		a := tk.Attempts[len(tk.Attempts)-1]
		return a.N == 2 && a.State == wire.AttemptDone && a.CheckRuns >= 2 && a.Verdict != nil && a.Verdict.Score == 4
	})
	reviewed := tk.Attempts[2]
	if reviewed.Passed == nil || !*reviewed.Passed || !strings.Contains(reviewed.Why, "pass") || len(reviewed.Reviews) != 1 || reviewed.Reviews[0].File != "greeting.txt" || reviewed.Reviews[0].Line != 1 {
		t.Errorf("attempt 2 after its review: passed %v, why %q, reviews %+v", reviewed.Passed, reviewed.Why, reviewed.Reviews)
	}
	if tk.Attempts[0].N != 1 {
		t.Errorf("after the review, attempt %d ranks first", tk.Attempts[0].N)
	}

	// Land the best: refused until the user has read the hook it adds, then through the
	// queue, the host branch fast-forwarded, the hook never run on the host.
	_, errOut, code := paddock("", "task", "land", "greet")
	if code == 0 || !strings.Contains(errOut, ".githooks/post-merge") || !strings.Contains(errOut, "--yes") {
		t.Fatalf("task land greet, its work adding a git hook: exit %d\n%s", code, errOut)
	}
	if tip := hostGit(t, repo, "rev-parse", "main"); tip != base {
		t.Fatalf("a refused landing moved main from %s to %s", base, tip)
	}
	must("", "task", "land", "greet", "--yes", "--wait")
	if log := hostGit(t, repo, "log", "--format=%s", base+"..main"); log != "greeting of task/greet/1" {
		t.Fatalf("host log after landing attempt 1:\n%s", log)
	}
	if parent := hostGit(t, repo, "rev-parse", "main^"); parent != base {
		t.Fatalf("the landed commit's parent is %s, not the base %s: not a fast-forward", parent, base)
	}
	if got := readHostFile(t, filepath.Join(repo, "greeting.txt")); got != "hello, world\n" {
		t.Fatalf("the host's checkout of main has greeting %q after landing", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "hook-ran")); err == nil {
		t.Fatal("the git hook the attempt added ran on the host")
	}

	// Land the Codex attempt: its rebase onto main, where attempt 1 landed, conflicts,
	// which the command says; its agent is told, resolves it and ends its turn; the
	// queue tries again and lands it after the first, though the daemon was killed
	// meanwhile.
	_, errOut, code = paddock("", "task", "land", "greet", "--attempt", "3", "--wait")
	if code == 0 || !strings.Contains(errOut, "conflicts with main") || !strings.Contains(errOut, "greeting.txt") {
		t.Fatalf("task land greet --attempt 3 --wait, its work conflicting with what landed: exit %d\n%s", code, errOut)
	}
	// The daemon dies (kill -9) while the agent works on its answer (once the conflict
	// was announced): the next command starts another, which sees the agent's turn end
	// and takes the entry up again.
	waitUntil(t, time.Minute, "the conflict announced, the Codex agent at work on it", func() bool {
		told := false
		for _, r := range codex.Requests() {
			told = told || r.Contains(conflictMarker)
		}
		return told && eventsSeen(t, must)["task-conflict greet-3"]
	})
	killWait(t, clitest.DaemonPID(h.Dir))
	var entry wire.QueueEntry
	waitUntil(t, 5*time.Minute, "attempt 3 landed", func() bool {
		var q []wire.QueueEntry
		if err := json.Unmarshal([]byte(must("", "task", "queue", "greet", "--json")), &q); err != nil {
			t.Fatal(err)
		}
		for _, e := range q {
			if e.Attempt == 3 {
				entry = e
			}
		}
		if entry.State == wire.QueueFailed || entry.State == wire.QueueDropped {
			t.Fatalf("attempt 3's entry: %+v", entry)
		}
		return entry.State == wire.QueueLanded
	})
	told := false
	for _, r := range codex.Requests() {
		told = told || r.Contains(conflictMarker) && r.Contains("greeting.txt")
	}
	if !told {
		t.Error("the Codex agent was never told of the conflict on greeting.txt")
	}
	if log := hostGit(t, repo, "log", "--format=%s", base+"..main"); log != "greeting of task/greet/3\ngreeting of task/greet/1" {
		t.Fatalf("host log after landing attempt 3:\n%s", log)
	}
	if merges := hostGit(t, repo, "rev-list", "--merges", base+"..main"); merges != "" {
		t.Fatalf("merge commits on main: %s", merges)
	}
	if got := readHostFile(t, filepath.Join(repo, "greeting.txt")); got != "hello, world and there\n" {
		t.Fatalf("the host's greeting after both landings: %q", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "hook-ran")); err == nil {
		t.Fatal("the git hook ran on the host at the second landing")
	}

	// The other task's attempt as a pull request: its commit pushed to a branch of the
	// repository on GitHub, the pull request opened into main with the task in its body.
	waitUntil(t, time.Minute, "task pr done", func() bool { return show("pr").State == wire.TaskDone })
	var pr wire.QueueEntry
	if err := json.Unmarshal([]byte(must("", "task", "land", "pr", "--pr", "--wait", "--json")), &pr); err != nil {
		t.Fatal(err)
	}
	if pr.State != wire.QueuePR || pr.PR == nil || pr.PR.Number != 1 || pr.PR.State != "open" || pr.Commit == "" {
		t.Fatalf("task land pr --pr: %+v (pull request %+v)", pr, pr.PR)
	}
	opened, ok := gh.Pull(1)
	if !ok || opened.Base != "main" || opened.Head != pr.PR.Branch || !strings.Contains(opened.Body, greetCheck) || !strings.Contains(opened.Title, "hello, pull request") {
		t.Fatalf("the pull request GitHub holds: %+v", opened)
	}
	if got := gh.Branch("acme", "greet", pr.PR.Branch); got != pr.Commit {
		t.Fatalf("GitHub's %s is at %q, want the attempt's commit %s", pr.PR.Branch, got, pr.Commit)
	}
	if wrong := gh.Wrong(); len(wrong) > 0 {
		t.Fatalf("requests GitHub would take but should not have been sent: %v", wrong)
	}
	if cfg := hostGit(t, repo, "config", "--list", "--show-origin"); strings.Contains(cfg, gh.Token) {
		t.Fatalf("the token is in the host repository's config:\n%s", cfg)
	}
	if main := hostGit(t, repo, "log", "-1", "--format=%s", "main"); main != "greeting of task/greet/3" {
		t.Fatalf("the pull request moved the host's main to %q", main)
	}

	// What happened is in the events, on the attempts' sandboxes, for notifications.
	seen := eventsSeen(t, must)
	for _, want := range []string{"task-attempt-passed greet-1", "task-attempt-failed greet-2", "task-attempt-passed greet-2", "task-done",
		"task-conflict greet-3", "task-landed greet-1", "task-landed greet-3", "task-landed pr-1"} {
		if !seen[want] {
			t.Errorf("no event %s", want)
		}
	}

	// task rm takes the attempts' sandboxes with it, on either backend.
	must("", "task", "rm", "greet")
	must("", "task", "rm", "pr")
	if ls := must("", "ls"); strings.Contains(ls, "greet-") || strings.Contains(ls, "pr-1") {
		t.Fatalf("sandboxes left after task rm:\n%s", ls)
	}
	if tasks := must("", "task", "ls", "--json"); strings.TrimSpace(tasks) != "[]" {
		t.Fatalf("tasks left after task rm: %s", tasks)
	}
}

// eventsSeen is the set of the daemon's recorded events, each as "KIND" and "KIND SANDBOX".
func eventsSeen(t *testing.T, must mustRun) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for line := range strings.Lines(must("", "events", "--no-follow", "--json")) {
		var ev wire.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("events --json: %v: %s", err, line)
		}
		seen[ev.Kind+" "+ev.Sandbox] = true
		seen[ev.Kind] = true
	}
	return seen
}

// hostGit runs git in the host repository repo and returns its output, trimmed.
func hostGit(t *testing.T, repo string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeHostFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readHostFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
