package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/proxy/creds"
	"github.com/paddockhq/paddock/internal/testenv"
)

// literal is a grep pattern matching s and not itself: its last character in brackets.
func literal(s string) string { return s[:len(s)-1] + "[" + s[len(s)-1:] + "]" }

// words is text with its runs of spaces and line breaks made one space: a screen where
// the agent wrapped its lines reads as one sentence.
func words(text string) string { return strings.Join(strings.Fields(text), " ") }

// TestClaudeSubscriptionEndToEnd runs the real Claude Code in a bwrap sandbox on a
// subscription login given with `paddock login claude`: the model sees the real token
// as a bearer token with the OAuth beta flag, the sandbox holds only the placeholder,
// and a revoked login shows the agent what to run, and doctor too.
func TestClaudeSubscriptionEndToEnd(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "claude")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	model := modeltest.NewAnthropic(t)
	const realToken = "sk-ant-oat01-e2e-REAL-0123456789abcdefghijklmnopqrstuvwxyz-ABCDEFAA"
	h, repo := e2eHome(t)
	h.Setenv("ANTHROPIC_BASE_URL", model.URL())
	h.Setenv("ANTHROPIC_API_KEY", "")
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)

	// The token of `claude setup-token`, piped in.
	must("Your OAuth token (valid for 1 year):\n\n"+realToken+"\n", "login", "claude")
	if keys := must("", "key", "ls"); !strings.Contains(keys, "anthropic  subscription login") {
		t.Errorf("key ls:\n%s", keys)
	}
	must("", "up", repo, "--agent", "claude")
	pane := func() string {
		return must("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-J", "-S", "-100", "-t", "claude")
	}
	defer func() {
		if t.Failed() {
			t.Logf("Claude's screen:\n%s", pane())
		}
	}()
	waitUntil(t, 60*time.Second, "Claude's prompt", func() bool { return strings.Contains(pane(), "❯") })
	must("RUN: id -un > /workspace/whoami.txt", "chat", "repo/claude")
	waitUntil(t, 60*time.Second, "the tool's output file", func() bool {
		out, _, code := paddock("", "exec", "repo", "--", "cat", "/workspace/whoami.txt")
		return code == 0 && out == "agent\n"
	})
	waitUntil(t, 30*time.Second, "the turn to end", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "idle")
	})
	reqs := model.Requests()
	for _, r := range reqs {
		if r.Header.Get("Authorization") != "Bearer "+realToken || r.Header.Get("X-Api-Key") != "" ||
			!strings.Contains(r.Header.Get("Anthropic-Beta"), creds.ClaudeOAuthBeta) {
			t.Fatalf("the model got %s with Authorization %q, x-api-key %q, anthropic-beta %q", r.Path,
				r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), r.Header.Get("Anthropic-Beta"))
		}
	}
	// The session's Claude Code holds the placeholder; nothing in the sandbox holds the
	// token (environments, the home with its transcripts, /workspace, /tmp).
	env := must("", "exec", "repo", "--", "sh", "-c", "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '^CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-paddoc[k]' || true")
	if strings.TrimSpace(env) == "0" {
		t.Error("no process of the sandbox holds the placeholder subscription token")
	}
	nothingInside(t, must, "e2e-REA[L]", "the real subscription token")

	// Usage is metered as for a key.
	if usage := must("", "usage", "repo", "--json"); !strings.Contains(usage, `"session": "claude"`) {
		t.Errorf("usage of a subscription session:\n%s", usage)
	}

	// Revoked: the provider refuses the token; Claude Code shows paddock's words, and
	// doctor says how to log in again.
	model.Revoke(realToken)
	must("are you there?", "chat", "repo/claude")
	waitUntil(t, 60*time.Second, "the refusal on Claude's screen", func() bool {
		return strings.Contains(words(pane()), "run `paddock login claude` on the daemon's host")
	})
	doctor, _, _ := paddock("", "doctor")
	if !strings.Contains(doctor, "warning  claude: the provider answered 401") || !strings.Contains(doctor, "run `paddock login claude`") {
		t.Fatalf("doctor after a revoked login:\n%s", doctor)
	}
	// A new login, and the same session goes on.
	const newToken = "sk-ant-oat01-e2e-NEW-0123456789abcdefghijklmnopqrstuvwxyz-ABCDEFAA"
	must(newToken+"\n", "login", "claude")
	before := len(model.Requests())
	must("RUN: echo again > /workspace/again.txt", "chat", "repo/claude")
	waitUntil(t, 60*time.Second, "the next turn with the new login", func() bool {
		out, _, code := paddock("", "exec", "repo", "--", "cat", "/workspace/again.txt")
		return code == 0 && out == "again\n"
	})
	if r := model.Requests()[before]; r.Header.Get("Authorization") != "Bearer "+newToken {
		t.Fatalf("after a new login the model got %q", r.Header.Get("Authorization"))
	}
	if doctor := must("", "doctor"); !strings.Contains(doctor, "ok       claude (token)") {
		t.Errorf("doctor after a new login:\n%s", doctor)
	}
}

// TestCodexSubscriptionEndToEnd runs the real Codex in a bwrap sandbox on the host's
// ChatGPT login (`paddock login codex` reads $CODEX_HOME/auth.json): its calls reach
// ChatGPT's backend (scripted) with the real token and account; an expired token is
// refreshed by the daemon against a faithful token endpoint; a token the backend stops
// taking makes Codex refresh through the proxy, and the session goes on; a revoked login
// gives a clear error, and doctor says how to log in again.
func TestCodexSubscriptionEndToEnd(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "codex")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	model := modeltest.NewOpenAIResponses(t)
	claims := map[string]any{"email": "dev@example.com", "https://api.openai.com/auth": map[string]any{
		"chatgpt_plan_type": "pro", "chatgpt_account_id": "acct-e2e-REAL-42"}}
	tokens := modeltest.NewTokenEndpoint(t, "app_EMoamEEZ73f0CkXaXp7hrann", "rt-e2e-REAL-first", claims)

	// The host's Codex login, its access token expired.
	codexHome := t.TempDir()
	expired := modeltest.JWT(map[string]any{"exp": time.Now().Add(-time.Hour).Unix()})
	auth := `{"OPENAI_API_KEY": null, "tokens": {"id_token": "` + modeltest.JWT(claims) + `", "access_token": "` + expired +
		`", "refresh_token": "rt-e2e-REAL-first", "account_id": "acct-e2e-REAL-42"}, "last_refresh": "2026-11-01T00:00:00Z"}`
	if err := os.WriteFile(filepath.Join(codexHome, "auth.json"), []byte(auth), 0o600); err != nil {
		t.Fatal(err)
	}
	h, repo := e2eHome(t)
	home := h.Dir
	h.Setenv("PADDOCK_CHATGPT_BASE_URL", model.URL())
	h.Setenv("CODEX_REFRESH_TOKEN_URL_OVERRIDE", tokens.URL())
	h.Setenv("OPENAI_API_KEY", "")
	h.Setenv("CODEX_HOME", codexHome)
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "login", "codex")
	if fi, err := os.Stat(filepath.Join(home, "logins", "codex.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the daemon's copy of the login: %v %v", fi, err)
	}

	must("", "up", repo, "--agent", "codex")
	pane := func() string {
		return must("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-J", "-S", "-100", "-t", "codex")
	}
	defer func() {
		if t.Failed() {
			t.Logf("Codex's screen:\n%s", pane())
			for _, r := range model.Requests() {
				t.Logf("model request %s bearer %.40s account %q", r.Path, r.APIKey, r.Header.Get("Chatgpt-Account-Id"))
			}
		}
	}()
	waitUntil(t, 60*time.Second, "Codex's prompt", func() bool { return strings.Contains(pane(), "›") })
	must("RUN: id -un > /workspace/codex.txt", "chat", "repo/codex")
	waitUntil(t, 60*time.Second, "the command's output file", func() bool {
		out, _, code := paddock("", "exec", "repo", "--", "cat", "/workspace/codex.txt")
		return code == 0 && out == "agent\n"
	})
	// The expired token was refreshed on the host before the first call.
	if tokens.Grants() < 1 {
		t.Fatal("the daemon did not refresh the expired token")
	}
	first := tokens.Access()
	calls := 0
	for _, r := range model.Requests() {
		if r.Path != modeltest.ChatGPTResponses {
			continue
		}
		calls++
		if r.APIKey != first || r.Header.Get("Chatgpt-Account-Id") != "acct-e2e-REAL-42" {
			t.Fatalf("a model call carried bearer %.30s... account %q, want the refreshed token and the real account", r.APIKey, r.Header.Get("Chatgpt-Account-Id"))
		}
	}
	if calls == 0 {
		t.Fatal("no model call reached ChatGPT's backend")
	}
	waitUntil(t, 30*time.Second, "the session to go idle", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "idle")
	})
	// Metered as with a key, to the session (Codex sends X-Paddock-Session).
	if usage := must("", "usage", "repo", "--json"); !strings.Contains(usage, `"session": "codex"`) {
		t.Errorf("usage of a ChatGPT session:\n%s", usage)
	}

	// The backend stops taking the token (expired early): Codex refreshes through the
	// proxy, the daemon refreshes on the host, and the turn goes on.
	model.Revoke(first)
	grants := tokens.Grants()
	must("RUN: echo second > /workspace/second.txt", "chat", "repo/codex")
	waitUntil(t, 90*time.Second, "the turn after the token was refused", func() bool {
		out, _, code := paddock("", "exec", "repo", "--", "cat", "/workspace/second.txt")
		return code == 0 && out == "second\n"
	})
	if tokens.Grants() != grants+1 || model.Key() != tokens.Access() {
		t.Fatalf("after the refusal: %d grants (was %d), the model's last bearer is the new token: %v", tokens.Grants(), grants, model.Key() == tokens.Access())
	}

	// Nothing real in the sandbox: not the tokens, refresh tokens, nor the account.
	for _, secret := range []string{"e2e-REAL", tokens.RefreshToken(), first[strings.LastIndex(first, ".")+1:], tokens.Access()[strings.LastIndex(tokens.Access(), ".")+1:]} {
		nothingInside(t, must, literal(secret), "a real token of the login")
	}
	if authFile := must("", "exec", "repo", "--", "cat", "/home/agent/.codex/auth.json"); !strings.Contains(authFile, "paddock-refresh-") {
		t.Errorf("the sandbox's auth.json:\n%s", authFile)
	}
	waitUntil(t, 30*time.Second, "the session to go idle", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "idle")
	})

	// Revoked: the backend refuses the token and the refresh fails; Codex shows the
	// error, and doctor says how to log in again.
	tokens.Revoke()
	model.Revoke(tokens.Access())
	must("are you there?", "chat", "repo/codex")
	// Codex words a refused refresh itself; it does not show the endpoint's message.
	waitUntil(t, 90*time.Second, "the refusal on Codex's screen", func() bool {
		return strings.Contains(words(pane()), "Your access token could not be refreshed because your refresh token was revoked")
	})
	t.Logf("Codex's screen with a revoked login:\n%s", pane())
	doctor, _, _ := paddock("", "doctor")
	if !strings.Contains(doctor, "warning  codex") || !strings.Contains(doctor, "run `paddock login codex`") {
		t.Fatalf("doctor after a revoked login:\n%s", doctor)
	}
}
