package creds

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/modeltest"
)

// loginProxy is a proxy over upstream for every provider, with logins kept in a
// temporary directory and refreshed at tokens.
func loginProxy(t *testing.T, upstream string, claudeTokens, codexTokens *modeltest.TokenEndpoint) (*httptest.Server, *Logins) {
	settings := map[string]Settings{"anthropic": {BaseURL: upstream}, ChatGPT: {BaseURL: upstream}, "openai": {BaseURL: upstream + "/v1", Key: "sk-openai-REAL"}}
	if claudeTokens != nil {
		settings["anthropic"] = Settings{BaseURL: upstream, TokenURL: claudeTokens.URL()}
	}
	if codexTokens != nil {
		settings[ChatGPT] = Settings{BaseURL: upstream, TokenURL: codexTokens.URL()}
	}
	provs, err := Providers(settings, func(string) string { return "" }, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	logins := NewLogins(t.TempDir(), settings, func(string) string { return "" }, nil)
	p := New(provs, nil, nil)
	p.SetLogins(logins)
	srv := httptest.NewServer(p.Handler("id", "sb", token))
	t.Cleanup(srv.Close)
	return srv, logins
}

// recorder is a provider that records the requests it gets and answers status.
type recorder struct {
	mu     sync.Mutex
	reqs   []*http.Request
	status int
	srv    *httptest.Server
}

func newRecorder(t *testing.T) *recorder {
	rec := &recorder{status: http.StatusOK}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, r.Clone(r.Context()))
		status := rec.status
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"path":%q,"account":%q}`, r.URL.Path, r.Header.Get("Chatgpt-Account-Id"))
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (r *recorder) all() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Request(nil), r.reqs...)
}

func send(t *testing.T, method, url string, headers map[string]string, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

const realClaude = "sk-ant-oat01-REAL-subscription-token"

func TestLoginClaudeSwapsPlaceholderOnAPIPathsOnly(t *testing.T) {
	up := newRecorder(t)
	srv, logins := loginProxy(t, up.srv.URL, nil, nil)
	if err := logins.Save(LoginClaude, Login{AccessToken: realClaude, Source: "token"}); err != nil {
		t.Fatal(err)
	}
	placeholder := map[string]string{"Authorization": "Bearer " + ClaudePlaceholder(token), "Anthropic-Beta": "claude-code-20250219"}

	// A model call with the placeholder reaches Anthropic with the real token, as a
	// bearer token, with the OAuth beta flag and no x-api-key.
	status, _ := send(t, "POST", srv.URL+"/anthropic/v1/messages?beta=true", placeholder, `{}`)
	reqs := up.all()
	if status != 200 || len(reqs) != 1 {
		t.Fatalf("status %d, %d upstream requests", status, len(reqs))
	}
	got := reqs[0].Header
	if got.Get("Authorization") != "Bearer "+realClaude || got.Get("X-Api-Key") != "" ||
		!strings.Contains(got.Get("Anthropic-Beta"), ClaudeOAuthBeta) || !strings.Contains(got.Get("Anthropic-Beta"), "claude-code-20250219") {
		t.Fatalf("upstream headers: %v", got)
	}
	// The sandbox's API-key placeholder in x-api-key is swapped for the login too, and
	// the x-api-key is not passed on.
	send(t, "POST", srv.URL+"/anthropic/v1/messages", map[string]string{"X-Api-Key": token}, `{}`)
	if got := up.all()[1].Header; got.Get("Authorization") != "Bearer "+realClaude || got.Get("X-Api-Key") != "" {
		t.Fatalf("upstream headers for an x-api-key request: %v", got)
	}

	// Anything but the API paths is refused before it goes anywhere.
	for _, path := range []string{"/anthropic/api/oauth/profile", "/anthropic/api/event_logging/v2/batch", "/anthropic/v1/../api/oauth/usage"} {
		if status, body := send(t, "GET", srv.URL+path, placeholder, ""); status != http.StatusForbidden && status != http.StatusNotFound {
			t.Errorf("%s: %d %s", path, status, body)
		}
	}
	// Another sandbox's placeholder, or a made-up one, gets nothing.
	for _, bad := range []string{ClaudePlaceholder("paddock-other-sandbox"), "sk-ant-oat01-guess", realClaude} {
		if status, _ := send(t, "POST", srv.URL+"/anthropic/v1/messages", map[string]string{"Authorization": "Bearer " + bad}, `{}`); status != http.StatusUnauthorized {
			t.Errorf("placeholder %q: status %d, want 401", bad, status)
		}
	}
	// The placeholder sent to another provider's route never carries the Claude token there.
	send(t, "POST", srv.URL+"/openai/v1/responses", placeholder, `{}`)
	send(t, "POST", srv.URL+"/chatgpt/backend-api/codex/responses", placeholder, `{}`)
	for _, r := range up.all() {
		if r.URL.Path != "/v1/messages" && strings.Contains(r.Header.Get("Authorization"), realClaude) {
			t.Fatalf("the Claude token went to %s", r.URL.Path)
		}
	}
	if n := len(up.all()); n != 3 {
		t.Fatalf("upstream got %d requests, want the 2 model calls and the openai one", n)
	}
	// An agent using the proxy as an HTTP proxy to its own host: the request goes to the
	// provider's upstream, never to the host it named.
	evil := newRecorder(t)
	u, _ := url.Parse(srv.URL)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
	req, _ := http.NewRequest("POST", evil.srv.URL+"/anthropic/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+ClaudePlaceholder(token))
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
	}
	if len(evil.all()) != 0 {
		t.Fatal("the proxy sent a request to the host the agent named")
	}
	if last := up.all()[len(up.all())-1]; last.Header.Get("Authorization") != "Bearer "+realClaude {
		t.Fatalf("the proxied request did not reach the provider: %v", last.Header)
	}
}

func TestLoginClaudeRevokedGivesAgentAndDoctorAClearError(t *testing.T) {
	up := newRecorder(t)
	tokens := modeltest.NewTokenEndpoint(t, "9d1c250a-e61b-44d9-88ed-5944d1962f5e", "rt-claude-1", nil)
	srv, logins := loginProxy(t, up.srv.URL, tokens, nil)
	logins.Save(LoginClaude, Login{AccessToken: "sk-ant-oat01-old", RefreshToken: "rt-claude-1", ExpiresAt: time.Now().Add(time.Hour),
		Scopes: []string{"user:inference"}, Source: "claude-credentials"})
	placeholder := map[string]string{"Authorization": "Bearer " + ClaudePlaceholder(token)}

	// The provider refuses the token: the agent reads paddock's message in Anthropic's shape.
	up.mu.Lock()
	up.status = http.StatusUnauthorized
	up.mu.Unlock()
	status, body := send(t, "POST", srv.URL+"/anthropic/v1/messages", placeholder, `{}`)
	if status != 401 || !strings.Contains(body, `"authentication_error"`) || !strings.Contains(body, "run `paddock login claude`") {
		t.Fatalf("refused token: %d %s", status, body)
	}
	if st := logins.Status(LoginClaude); !strings.Contains(st.Problem, "401") {
		t.Fatalf("status after a 401: %+v", st)
	}
	// The next request refreshes first (the endpoint checks the grant), and goes on.
	up.mu.Lock()
	up.status = http.StatusOK
	up.mu.Unlock()
	if status, body := send(t, "POST", srv.URL+"/anthropic/v1/messages", placeholder, `{}`); status != 200 {
		t.Fatalf("after the refresh: %d %s", status, body)
	}
	reqs := up.all()
	if got := reqs[len(reqs)-1].Header.Get("Authorization"); got != "Bearer "+tokens.Access() || tokens.Grants() != 1 {
		t.Fatalf("upstream got %q after %d grants, want the refreshed token", got, tokens.Grants())
	}
	if st := logins.Status(LoginClaude); st.Problem != "" {
		t.Fatalf("a refreshed login still has a problem: %+v", st)
	}
	kept, _ := logins.Load(LoginClaude)
	if kept.RefreshToken != tokens.RefreshToken() || kept.AccessToken != tokens.Access() {
		t.Fatalf("the refreshed tokens were not kept: %+v", kept)
	}

	// Revoked: the refresh is refused, the agent is told what to run, and so is doctor.
	tokens.Revoke()
	logins.Refused(LoginClaude, 401)
	n := len(up.all())
	status, body = send(t, "POST", srv.URL+"/anthropic/v1/messages", placeholder, `{}`)
	if status != 401 || !strings.Contains(body, "no longer works") || !strings.Contains(body, "paddock login claude") {
		t.Fatalf("revoked: %d %s", status, body)
	}
	if len(up.all()) != n {
		t.Fatal("a request with a revoked login went upstream")
	}
	if st := logins.Status(LoginClaude); !strings.Contains(st.Problem, "refused to refresh") {
		t.Fatalf("doctor's status of a revoked login: %+v", st)
	}
}

func TestLoginCodexSwapsTokenAndAccountAndRefreshes(t *testing.T) {
	up := newRecorder(t)
	claims := map[string]any{"email": "me@example.com", chatgptAuthClaim: map[string]any{"chatgpt_plan_type": "pro", "chatgpt_account_id": "acct-REAL"}}
	tokens := modeltest.NewTokenEndpoint(t, "app_EMoamEEZ73f0CkXaXp7hrann", "rt-codex-REAL", claims)
	srv, logins := loginProxy(t, up.srv.URL, nil, tokens)
	expired := unsignedJWT(map[string]any{"exp": time.Now().Add(-time.Hour).Unix()})
	auth := fmt.Sprintf(`{"OPENAI_API_KEY": null, "tokens": {"id_token": %q, "access_token": %q, "refresh_token": "rt-codex-REAL", "account_id": "acct-REAL"}, "last_refresh": "2026-01-01T00:00:00Z"}`,
		modeltest.JWT(claims), expired)
	lg, err := ParseLogin(LoginCodex, "", []byte(auth))
	if err != nil {
		t.Fatal(err)
	}
	if err := logins.Save(LoginCodex, lg); err != nil {
		t.Fatal(err)
	}

	// The sandbox's auth.json: Codex's shape, placeholders only, the plan kept.
	file := string(CodexAuthFile(token, lg, time.Now()))
	for _, secret := range []string{"rt-codex-REAL", "acct-REAL", expired} {
		if strings.Contains(file, secret) {
			t.Fatalf("the sandbox's auth.json holds %q:\n%s", secret, file)
		}
	}
	var sandboxAuth struct {
		Tokens struct {
			IDToken      string `json:"id_token"`
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
			AccountID    string `json:"account_id"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(file), &sandboxAuth); err != nil {
		t.Fatal(err)
	}
	if claims, ok := jwtClaims(sandboxAuth.Tokens.IDToken); !ok || claims["email"] != "me@example.com" ||
		claims[chatgptAuthClaim].(map[string]any)["chatgpt_plan_type"] != "pro" {
		t.Fatalf("the placeholder id_token lost the plan or email: %v", claims)
	}

	// A model call: the expired token is refreshed on the host first, then the real one
	// and the real account go upstream.
	headers := map[string]string{"Authorization": "Bearer " + sandboxAuth.Tokens.AccessToken, "Chatgpt-Account-Id": sandboxAuth.Tokens.AccountID}
	status, body := send(t, "POST", srv.URL+"/chatgpt/backend-api/codex/responses", headers, `{}`)
	if status != 200 || tokens.Grants() != 1 {
		t.Fatalf("model call: %d %s after %d grants", status, body, tokens.Grants())
	}
	got := up.all()[0]
	if got.URL.Path != "/backend-api/codex/responses" || got.Header.Get("Authorization") != "Bearer "+tokens.Access() || got.Header.Get("Chatgpt-Account-Id") != "acct-REAL" {
		t.Fatalf("upstream got %s with %v", got.URL.Path, got.Header)
	}
	if kept, _ := logins.Load(LoginCodex); kept.RefreshToken != tokens.RefreshToken() || kept.AccessToken != tokens.Access() || kept.ExpiresAt.Before(time.Now()) {
		t.Fatalf("the refreshed login was not kept: %+v", kept)
	}
	// Telemetry and plugins are refused; the model list and account look-ups go.
	for path, want := range map[string]int{"/backend-api/codex/analytics-events/events": 403, "/backend-api/ps/mcp": 403,
		"/backend-api/codex/models": 200, "/backend-api/wham/usage": 200, "/backend-api/codex/../ps/mcp": 403} {
		if status, body := send(t, "GET", srv.URL+"/chatgpt"+path, headers, ""); status != want {
			t.Errorf("%s: %d %s, want %d", path, status, body, want)
		}
	}

	// An account look-up answers with the real account: the sandbox reads the placeholder.
	if _, body := send(t, "GET", srv.URL+"/chatgpt/backend-api/wham/accounts/check", headers, ""); strings.Contains(body, "acct-REAL") ||
		!strings.Contains(body, codexPlaceholderAccount) {
		t.Errorf("account look-up as the sandbox reads it: %s", body)
	}

	// Codex's own refresh reaches the proxy: the placeholder refresh token gets the
	// placeholders again, and nothing real.
	refresh := func(rt string) (int, string) {
		return send(t, "POST", srv.URL+CodexRefreshPath, map[string]string{"Content-Type": "application/json"},
			fmt.Sprintf(`{"client_id":"app_EMoamEEZ73f0CkXaXp7hrann","grant_type":"refresh_token","refresh_token":%q}`, rt))
	}
	status, body = refresh(sandboxAuth.Tokens.RefreshToken)
	if status != 200 || !strings.Contains(body, sandboxAuth.Tokens.AccessToken) || strings.Contains(body, tokens.Access()) || strings.Contains(body, tokens.RefreshToken()) {
		t.Fatalf("refresh through the proxy: %d %s", status, body)
	}
	if status, _ := refresh(tokens.RefreshToken()); status != 401 {
		t.Fatalf("the real refresh token was taken at the sandbox's endpoint: %d", status)
	}

	// Revoked: the provider refuses the token, Codex's refresh then fails with the words
	// to run, and doctor knows.
	up.mu.Lock()
	up.status = 401
	up.mu.Unlock()
	tokens.Revoke()
	status, body = send(t, "POST", srv.URL+"/chatgpt/backend-api/codex/responses", headers, `{}`)
	if status != 401 || !strings.Contains(body, "paddock login codex") {
		t.Fatalf("refused token: %d %s", status, body)
	}
	status, body = refresh(sandboxAuth.Tokens.RefreshToken)
	if status != 401 || !strings.Contains(body, "refresh_token_invalidated") || !strings.Contains(body, "paddock login codex") {
		t.Fatalf("refresh of a revoked login: %d %s", status, body)
	}
	if st := logins.Status(LoginCodex); !st.Present || !strings.Contains(st.Problem, "refused") {
		t.Fatalf("status: %+v", st)
	}
}

func TestLoginChatGPTWithoutLoginSaysWhatToRun(t *testing.T) {
	up := newRecorder(t)
	srv, _ := loginProxy(t, up.srv.URL, nil, nil)
	status, body := send(t, "POST", srv.URL+"/chatgpt/backend-api/codex/responses", map[string]string{"Authorization": "Bearer " + token}, `{}`)
	if status != 401 || !strings.Contains(body, "paddock login codex") || len(up.all()) != 0 {
		t.Fatalf("%d %s, %d upstream", status, body, len(up.all()))
	}
}

func TestParseLogin(t *testing.T) {
	creds := `{"claudeAiOauth":{"accessToken":"sk-ant-oat01-a","refreshToken":"sk-ant-ort01-r","expiresAt":1795600000000,"scopes":["user:inference","user:profile"],"subscriptionType":"max"}}`
	lg, err := ParseLogin(LoginClaude, "", []byte(creds))
	if err != nil || lg.AccessToken != "sk-ant-oat01-a" || lg.RefreshToken != "sk-ant-ort01-r" || lg.ExpiresAt.UnixMilli() != 1795600000000 || len(lg.Scopes) != 2 {
		t.Fatalf("%+v %v", lg, err)
	}
	for _, c := range []struct{ name, token, file, want string }{
		{LoginClaude, "sk-ant-api03-xyz", "", "paddock key set anthropic"},
		{LoginClaude, "hello", "", "claude setup-token"},
		{LoginClaude, "", `{"mcpOAuth":{}}`, "no subscription login"},
		{LoginCodex, "", `{"OPENAI_API_KEY":"sk-x","tokens":null}`, "paddock key set openai"},
		{LoginCodex, "", `{}`, "codex login"},
		{"gemini", "x", "", "paddock knows claude, codex"},
	} {
		if _, err := ParseLogin(c.name, c.token, []byte(c.file)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q %s: %v, want %q", c.name, c.token, c.file, err, c.want)
		}
	}
}

func TestLoginFileIsPrivate(t *testing.T) {
	l := NewLogins(filepath.Join(t.TempDir(), "logins"), nil, func(string) string { return "" }, nil)
	if err := l.Save(LoginClaude, Login{AccessToken: "sk-ant-oat01-x", Source: "token"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(l.dir, "claude.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%v %v", fi.Mode(), err)
	}
	if err := l.Remove(LoginClaude); err != nil || l.Has(LoginClaude) {
		t.Fatalf("remove: %v", err)
	}
}
