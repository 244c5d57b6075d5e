package task

import (
	"slices"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/api/wire"

	_ "github.com/paddockhq/paddock/internal/agents/all"
)

func TestParseVerdict(t *testing.T) {
	for _, tc := range []struct {
		answer string
		score  int
		reason string
	}{
		{"The change is right and small.\nSCORE: 8/10 — does what was asked, with a test", 8, "does what was asked, with a test"},
		{"**SCORE:** 7/10 - handles the empty case\n", 7, "handles the empty case"},
		{"Good work overall.\n\nScore: 9", 9, "Good work overall."},
		{"score = 6.5/10: the test is weak", 7, "the test is weak"},
		{"Score 3/10 — it breaks the build", 3, "it breaks the build"},
		{"Reasons...\n10/10 — exactly the task", 10, "exactly the task"},
		{`Here it is: {"score": 4, "reason": "half done"}`, 4, "half done"},
		// The last score given is the answer, not one quoted before it.
		{"The prompt asks for SCORE: 2/10 lines...\nSCORE: 5/10 — fine", 5, "fine"},
		// A scripted model server's answer after running a command that prints the verdict.
		{"DONE: SCORE: 9/10 — passes its checks with the smallest diff\n", 9, "passes its checks with the smallest diff"},
	} {
		score, reason, err := parseVerdict(tc.answer)
		if err != nil || score != tc.score || reason != tc.reason {
			t.Errorf("parseVerdict(%q) = %d, %q, %v; want %d, %q", tc.answer, score, reason, err, tc.score, tc.reason)
		}
	}
	for _, answer := range []string{
		"ECHO: You are reviewing one attempt at a programming task. ... SCORE: <0-10>/10 — <the main reason>",
		"Looks fine to me.",
		"SCORE: 12/10 — amazing",
		"",
	} {
		if score, reason, err := parseVerdict(answer); err == nil {
			t.Errorf("parseVerdict(%q) = %d, %q; want an error saying it has no score", answer, score, reason)
		}
	}
}

func TestJudgePrompt(t *testing.T) {
	task := &wire.Task{Prompt: "Make add() handle\x1b[201~ negative numbers", Base: "0123456789abcdef0123"}
	a := &wire.Attempt{Checks: []wire.CheckResult{
		{Command: "go vet ./...", Exit: 0},
		{Command: "go test ./...", Exit: 1, Output: strings.Repeat("noise\n", 400) + "--- FAIL: TestAdd (0.00s)\n    add_test.go:9: add(-1, 1) = 2, want 0\n"},
	}}
	p := judgePrompt(task, a, "diff --git a/add.go b/add.go\n+\treturn a + b\n", true)
	for _, want := range []string{
		JudgeIntro,
		"Make add() handle[201~ negative numbers", // the escape that would end a paste is taken out
		"- `go vet ./...`: passed",
		"- `go test ./...`: FAILED, exit 1",
		"add(-1, 1) = 2, want 0", // the end of a failing check's output
		"against the task's base commit 0123456789ab",
		"+\treturn a + b",
		"The diff was cut at 60 KB: run `git diff 0123456789ab`",
		"SCORE: <0-10>/10",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("the judge's prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.ContainsRune(p, 0x1b) {
		t.Error("the judge's prompt holds an escape character, which its terminal would act on")
	}
	if strings.Count(p, "noise") > maxJudgeCheckOutput/6+1 {
		t.Errorf("the judge's prompt holds all of a check's output (%d lines of noise), not its end", strings.Count(p, "noise"))
	}
	if !strings.HasPrefix(p, JudgeIntro) {
		t.Errorf("the judge's prompt does not open with JudgeIntro, by which a scripted model server knows it:\n%s", p[:100])
	}

	p = judgePrompt(task, &wire.Attempt{}, "", false)
	for _, want := range []string{"The task has no checks.", "The work changes nothing"} {
		if !strings.Contains(p, want) {
			t.Errorf("the judge's prompt lacks %q:\n%s", want, p)
		}
	}
}

func TestJudgeCandidates(t *testing.T) {
	for _, tc := range []struct {
		judge    string
		attempts []string
		want     []string
	}{
		// Another vendor first, then the attempts' own kinds, the first asked for first.
		{"auto", []string{"claude", "claude"}, []string{"codex", "gemini", "claude"}},
		{"auto", []string{"codex", "claude", "codex"}, []string{"gemini", "codex", "claude"}},
		{"auto", []string{"claude", "codex", "gemini"}, []string{"claude", "codex", "gemini"}},
		// Commands and agents of no one vendor leave every vendor "another".
		{"auto", []string{"shell", "goose"}, []string{"claude", "codex", "gemini"}},
		{"codex", []string{"codex"}, []string{"codex"}},
	} {
		var as []wire.Attempt
		for i, k := range tc.attempts {
			as = append(as, wire.Attempt{N: i + 1, Agent: k})
		}
		got := judgeCandidates(tc.judge, as)
		// Only the agents named in want are compared: others of a vendor (qwen...)
		// may join the registry.
		got = slices.DeleteFunc(got, func(n string) bool { return !slices.Contains(tc.want, n) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("judge %s for %v: candidates %v, want %v", tc.judge, tc.attempts, got, tc.want)
		}
	}
}

func TestValidJudge(t *testing.T) {
	for _, ok := range []string{"", "auto", "claude", "codex", "gemini"} {
		if err := ValidJudge(ok); err != nil {
			t.Errorf("ValidJudge(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"nosuchagent", "shell", "goose"} {
		if err := ValidJudge(bad); err == nil {
			t.Errorf("ValidJudge(%q) = nil, want an error", bad)
		}
	}
}
