package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestClaudeBudgetEndToEnd runs the real Claude Code in a bwrap sandbox against a
// scripted model through the credential proxy: every model call is metered to the
// session; a budget of a few thousand tokens stops the agent at the limit, with the
// budget's message on its screen (not a crash); raising the budget lets the same
// session go on.
func TestClaudeBudgetEndToEnd(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "claude")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	model := modeltest.NewAnthropic(t)
	h, repo := e2eHome(t)
	home := h.Dir
	h.Setenv("ANTHROPIC_BASE_URL", model.URL())
	h.Setenv("ANTHROPIC_API_KEY", "sk-ant-budget-0123456789abcdefghijklmnop")
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "up", repo, "--agent", "claude")
	pane := func() string {
		return must("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-J", "-S", "-200", "-t", "claude")
	}
	defer func() {
		if t.Failed() {
			t.Logf("Claude's screen:\n%s", pane())
		}
	}()
	waitUntil(t, 60*time.Second, "Claude's prompt", func() bool { return strings.Contains(pane(), "❯") })

	// A budget smaller than one of Claude Code's requests: the first call goes through
	// (nothing is spent yet), the next is refused.
	must("", "budget", "set", "repo", "--tokens", "5000")
	must("RUN: echo one > /workspace/one.txt", "chat", "repo/claude")
	waitUntil(t, 60*time.Second, "the budget's message on Claude's screen", func() bool {
		return strings.Contains(pane(), "budget of sandbox repo is spent")
	})
	screen := pane()
	if !strings.Contains(screen, "paddock budget set repo --tokens 10000") {
		t.Errorf("the screen does not say how to raise the budget:\n%s", screen)
	}
	served := len(model.Requests())
	var rep struct {
		Groups []struct {
			Session  string `json:"session"`
			Model    string `json:"model"`
			Requests int64  `json:"requests"`
			Input    int64  `json:"input_tokens"`
			Output   int64  `json:"output_tokens"`
			Read     int64  `json:"cache_read_tokens"`
			Write    int64  `json:"cache_write_tokens"`
		} `json:"groups"`
		Total struct {
			Requests int64   `json:"requests"`
			Cost     float64 `json:"cost_usd"`
		} `json:"total"`
		Estimate bool `json:"estimate"`
	}
	if err := json.Unmarshal([]byte(must("", "usage", "repo", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if int(rep.Total.Requests) != served || len(rep.Groups) == 0 || !rep.Estimate || rep.Total.Cost <= 0 {
		t.Fatalf("usage %+v, with %d calls served by the model", rep, served)
	}
	for _, g := range rep.Groups {
		if g.Session != "claude" || g.Input <= 0 || g.Output <= 0 || g.Read != g.Requests*modeltest.AnthropicCacheRead || g.Write != g.Requests*modeltest.AnthropicCacheWrite {
			t.Errorf("usage group %+v: want session claude, with the scripted server's cache figures", g)
		}
	}
	if ls := must("", "ls"); !strings.Contains(ls, "~$") {
		t.Errorf("ls shows no cost:\n%s", ls)
	}
	// The sandbox read alone (as the TUI and web UI read it after each usage event)
	// carries the same usage as the list.
	paths, err := config.ForHome(home)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(paths.Socket)
	one, err := c.Get(t.Context(), "repo")
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.List(t.Context())
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if one.Usage == nil || list[0].Usage == nil || *one.Usage != *list[0].Usage || int(one.Usage.Requests) != served {
		t.Errorf("the sandbox's usage read alone %+v, in the list %+v, with %d calls served", one.Usage, list[0].Usage, served)
	}
	events := must("", "events", "--no-follow", "--since", "10m", "--json")
	for _, kind := range []string{`"kind":"usage"`, `"kind":"budget-spent"`} {
		if !strings.Contains(events, kind) {
			t.Errorf("no %s event:\n%s", kind, events)
		}
	}
	// Refused calls never reached the model.
	time.Sleep(2 * time.Second)
	if n := len(model.Requests()); n != served {
		t.Fatalf("the model got %d calls after the budget was spent", n-served)
	}

	// Raised, the same session goes on.
	must("", "budget", "set", "repo", "--tokens", "10000000")
	if ls := must("", "budget", "ls"); !strings.Contains(ls, "repo") || !strings.Contains(ls, "10.0M tokens") {
		t.Errorf("budget ls:\n%s", ls)
	}
	must("RUN: echo two > /workspace/two.txt", "chat", "repo/claude")
	waitUntil(t, 60*time.Second, "the model to get the next prompt", func() bool {
		for _, r := range model.Requests()[served:] {
			if r.Contains("echo two") {
				return true
			}
		}
		return false
	})
	waitUntil(t, 60*time.Second, "Claude's answer after the budget was raised", func() bool {
		_, after, _ := strings.Cut(pane(), "RUN: echo two")
		return strings.Contains(after, "DONE:")
	})
	if err := json.Unmarshal([]byte(must("", "usage", "repo/claude", "--json")), &rep); err != nil || int(rep.Total.Requests) != len(model.Requests()) {
		t.Errorf("usage after the budget was raised: %+v (%v), the model served %d calls", rep.Total, err, len(model.Requests()))
	}
}
