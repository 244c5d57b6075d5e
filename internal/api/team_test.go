package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/checkpoint"
	"github.com/paddockhq/paddock/internal/ghauth"
	"github.com/paddockhq/paddock/internal/ghauth/githubtest"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/store"
)

// teamTest is the TCP listener of remoteTest with sign-in with GitHub, against a fake
// GitHub that checks every request: alice and bob are members of acme, root is a
// member and an admin, mallory is not a member.
type teamTest struct {
	*remoteTest
	gh *githubtest.Server
}

func newTeamTest(t *testing.T) *teamTest {
	gh := githubtest.New(githubtest.App{ClientID: "Iv1.paddock", ClientSecret: "app-secret"}, "acme")
	t.Cleanup(func() {
		if wrong := gh.Wrong(); len(wrong) > 0 {
			t.Errorf("requests GitHub would refuse:\n%s", strings.Join(wrong, "\n"))
		}
		gh.Close()
	})
	gh.AddUser("alice", 101, "active")
	gh.AddUser("bob", 102, "active")
	gh.AddUser("root", 103, "active")
	gh.AddUser("mallory", 104, "")
	rt := newRemoteTest(t, false)
	rt.srv.EnableTeam(TeamOptions{
		GitHub:  ghauth.New(ghauth.Config{ClientID: "Iv1.paddock", ClientSecret: "app-secret", Org: "acme", WebURL: gh.URL, APIURL: gh.URL}),
		IsAdmin: func(login string) bool { return login == "root" },
		Recheck: 5 * time.Minute,
	})
	return &teamTest{remoteTest: rt, gh: gh}
}

// signIn is a browser signed in as login through GitHub's web sign-in.
func (tt *teamTest) signIn(login string) *http.Client {
	tt.t.Helper()
	tt.gh.SignInBrowser(login)
	c := tt.browser()
	if code, body := get(tt.t, c, tt.ts.URL+"/auth/github"); code != 200 {
		tt.t.Fatalf("%s's sign-in: %d %s", login, code, body)
	}
	return c
}

// browser is a browser with its own cookies that follows redirects, to GitHub and back.
func (tt *teamTest) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func sessionCookie(c *http.Client, base string) string {
	u, _ := url.Parse(base)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "paddock_session" {
			return ck.Value
		}
	}
	return ""
}

func (tt *teamTest) audit() []store.AuditEntry {
	tt.t.Helper()
	rows, err := tt.srv.svc.Store().Audit(context.Background(), time.Time{}, 0)
	if err != nil {
		tt.t.Fatal(err)
	}
	return rows
}

func hasAudit(rows []store.AuditEntry, who, action, detail string) bool {
	return slices.ContainsFunc(rows, func(e store.AuditEntry) bool {
		return e.Who == who && e.Action == action && strings.Contains(e.Detail, detail)
	})
}

func TestGitHubWebSignIn(t *testing.T) {
	tt := newTeamTest(t)

	// The sign-in page offers GitHub; a browser that is not signed in is offered it too.
	if code, body := get(t, tt.browser(), tt.ts.URL+"/login"); code != 200 || !strings.Contains(body, `href="/auth/github"`) || !strings.Contains(body, "acme") {
		t.Fatalf("the login page: %d %s", code, body)
	}
	if code, body := get(t, tt.browser(), tt.ts.URL+"/"); code != 401 || !strings.Contains(body, "Sign in with GitHub") {
		t.Fatalf("the page for a browser not signed in: %d %s", code, body)
	}

	// A member signs in: to GitHub and back, and the browser is alice's.
	tt.gh.SignInBrowser("alice")
	alice := tt.browser()
	code, body := get(t, alice, tt.ts.URL+"/auth/github")
	if code != 200 || !strings.Contains(body, "Signed in as alice") {
		t.Fatalf("alice's sign-in: %d %s", code, body)
	}
	if sessionCookie(alice, tt.ts.URL) == "" {
		t.Fatal("alice's browser got no session cookie")
	}
	if code, body := get(t, alice, tt.ts.URL+"/v1/me"); code != 200 || !strings.Contains(body, `"login":"alice"`) || strings.Contains(body, `"admin":true`) {
		t.Fatalf("alice's /v1/me: %d %s", code, body)
	}
	want := []string{"GET /login/oauth/authorize", "POST /login/oauth/access_token", "GET /user", "GET /user/memberships/orgs/acme"}
	if got := tt.gh.Requests(); !slices.Equal(got, want) {
		t.Errorf("GitHub got %q, want %q", got, want)
	}
	if !hasAudit(tt.audit(), "alice", "sign-in", "browser") {
		t.Errorf("the audit log has no sign-in of alice: %+v", tt.audit())
	}

	// Someone who is not a member of the organization is refused, with a page that says
	// why and what to do, and no session.
	tt.gh.SignInBrowser("mallory")
	mallory := tt.browser()
	code, body = get(t, mallory, tt.ts.URL+"/auth/github")
	if code != http.StatusForbidden || !strings.Contains(body, "mallory is not an active member of the organization acme") ||
		!strings.Contains(body, "ask an owner of the organization acme") {
		t.Fatalf("mallory's sign-in: %d %s", code, body)
	}
	if sessionCookie(mallory, tt.ts.URL) != "" {
		t.Fatal("mallory got a session")
	}
	if !hasAudit(tt.audit(), "mallory", "sign-in refused", "not an active member of acme") {
		t.Errorf("the audit log has no refusal of mallory: %+v", tt.audit())
	}
}

// steps runs a browser's sign-in one request at a time: it returns the browser, the
// callback URL GitHub sent it back to (not yet visited) and the code in it.
func (tt *teamTest) steps(login string) (*http.Client, string, string) {
	t := tt.t
	t.Helper()
	tt.gh.SignInBrowser(login)
	c := tt.browser()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(tt.ts.URL + githubLoginPath)
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("start: %v %v", err, resp)
	}
	resp, err = c.Get(resp.Header.Get("Location")) // GitHub's authorize page
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %v %v", err, resp)
	}
	back := resp.Header.Get("Location")
	u, _ := url.Parse(back)
	if !strings.HasPrefix(back, tt.ts.URL+githubCallbackPath+"?") || u.Query().Get("state") == "" {
		t.Fatalf("GitHub sent the browser to %s", back)
	}
	return c, back, u.Query().Get("code")
}

func TestGitHubSignInRefusals(t *testing.T) {
	tt := newTeamTest(t)

	// A state works once: the same callback again (a replay, or a reload) is refused.
	c, back, _ := tt.steps("alice")
	if code, body := get(t, c, back); code != 200 || !strings.Contains(body, "Signed in as alice") {
		t.Fatalf("the callback: %d %s", code, body)
	}
	if code, body := get(t, c, back); code != http.StatusUnauthorized || !strings.Contains(body, "cannot be finished") {
		t.Fatalf("the callback replayed: %d %s", code, body)
	}

	// A state is bound to the browser it was given to: another browser (an attacker who
	// sends the victim a link to finish the attacker's sign-in) is refused.
	_, back, _ = tt.steps("bob")
	if code, body := get(t, tt.browser(), back); code != http.StatusUnauthorized || !strings.Contains(body, "started in another browser") {
		t.Fatalf("another browser's callback: %d %s", code, body)
	}

	// PKCE: a code stolen from alice's sign-in and brought to the attacker's own sign-in
	// (its own state and cookie) is exchanged with the attacker's verifier, which GitHub
	// refuses; the attacker gets no session.
	_, _, stolen := tt.steps("alice")
	attacker, back, _ := tt.steps("mallory")
	u, _ := url.Parse(back)
	q := u.Query()
	q.Set("code", stolen)
	u.RawQuery = q.Encode()
	if code, body := get(t, attacker, u.String()); code != http.StatusUnauthorized || !strings.Contains(body, "code_verifier does not match") {
		t.Fatalf("a stolen code: %d %s", code, body)
	}
	if sessionCookie(attacker, tt.ts.URL) != "" {
		t.Fatal("a stolen code made a session")
	}
	// An expired state: a sign-in left for longer than OAuthStateTTL.
	c, back, _ = tt.steps("alice")
	tt.advance(OAuthStateTTL + time.Second)
	if code, _ := get(t, c, back); code != http.StatusUnauthorized {
		t.Fatalf("an expired sign-in: %d", code)
	}
}

func TestMembershipRechecked(t *testing.T) {
	tt := newTeamTest(t)
	alice := tt.signIn("alice")
	asks := func() int {
		n := 0
		for _, r := range tt.gh.Requests() {
			if r == "GET /user/memberships/orgs/acme" {
				n++
			}
		}
		return n
	}
	// Within Recheck, GitHub is not asked again; after it, it is, at the next request.
	before := asks()
	if code, _ := get(t, alice, tt.ts.URL+"/v1/sandboxes"); code != 200 || asks() != before {
		t.Fatalf("within the recheck: %d, %d asks", code, asks()-before)
	}
	tt.advance(5*time.Minute + time.Second)
	if code, _ := get(t, alice, tt.ts.URL+"/v1/sandboxes"); code != 200 || asks() != before+1 {
		t.Fatalf("after the recheck: %d, %d asks", code, asks()-before)
	}
	// She leaves the organization: the next check ends her session.
	tt.gh.SetMembership("alice", "")
	tt.advance(5*time.Minute + time.Second)
	code, body := get(t, alice, tt.ts.URL+"/v1/sandboxes")
	if code != http.StatusUnauthorized || !strings.Contains(body, "alice is no longer an active member of the GitHub organization acme") {
		t.Fatalf("after leaving: %d %s", code, body)
	}
	if code, _ := get(t, alice, tt.ts.URL+"/v1/sandboxes"); code != http.StatusUnauthorized {
		t.Fatalf("after leaving, again: %d", code)
	}
	if !hasAudit(tt.audit(), "alice", "membership revoked", "no longer an active member of acme") {
		t.Errorf("the audit log has no revocation: %+v", tt.audit())
	}
	// Back in the organization, she signs in again.
	tt.gh.SetMembership("alice", "active")
	if code, body := get(t, alice, tt.ts.URL+"/auth/github"); code != 200 {
		t.Fatalf("sign-in again: %d %s", code, body)
	}
	if code, _ := get(t, alice, tt.ts.URL+"/v1/sandboxes"); code != 200 {
		t.Fatalf("after signing in again: %d", code)
	}
}

func TestSandboxesByOwner(t *testing.T) {
	tt := newTeamTest(t)
	ctx := context.Background()
	st := tt.srv.svc.Store()
	alice, bob, root := tt.signIn("alice"), tt.signIn("bob"), tt.signIn("root")
	users, _ := st.Users(ctx)
	for _, sb := range []store.Sandbox{{ID: "a1", Name: "alices", OwnerID: users[0].ID}, {ID: "b1", Name: "bobs", OwnerID: users[1].ID}, {ID: "h1", Name: "hosts"}} {
		sb.Backend, sb.State = "none", "creating"
		if err := st.CreateSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateSession(ctx, store.Session{SandboxID: sb.ID, Name: sb.Name + "-chat", Agent: "shell"}); err != nil {
			t.Fatal(err)
		}
	}
	// Every session in one call, as `ls` asks: only the caller's own sandboxes'.
	for c, want := range map[*http.Client]string{alice: "alices", bob: "bobs", root: "alices bobs hosts"} {
		_, body := get(t, c, tt.ts.URL+"/v1/sessions")
		var all map[string][]session.Info
		if err := json.Unmarshal([]byte(body), &all); err != nil {
			t.Fatalf("GET /v1/sessions: %v: %s", err, body)
		}
		var got []string
		for name, list := range all {
			if len(list) != 1 || list[0].Name != name+"-chat" {
				t.Errorf("the sessions of %s: %+v", name, list)
			}
			got = append(got, name)
		}
		slices.Sort(got)
		if strings.Join(got, " ") != want {
			t.Errorf("GET /v1/sessions shows %q, want %q", got, want)
		}
	}
	names := func(c *http.Client) string {
		_, body := get(t, c, tt.ts.URL+"/v1/sandboxes")
		var out []string
		for _, n := range []string{"alices", "bobs", "hosts"} {
			if strings.Contains(body, `"name":"`+n+`"`) {
				out = append(out, n)
			}
		}
		return strings.Join(out, " ")
	}
	if got := names(alice); got != "alices" {
		t.Errorf("alice sees %q", got)
	}
	if got := names(bob); got != "bobs" {
		t.Errorf("bob sees %q", got)
	}
	if got := names(root); got != "alices bobs hosts" {
		t.Errorf("the admin sees %q", got)
	}
	tt.srv.EnableCheckpoints(checkpoint.New(checkpoint.Options{Sandboxes: tt.srv.svc, Store: st}), nil)
	if code, body := get(t, alice, tt.ts.URL+"/v1/sandboxes/alices/checkpoints"); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("alice GET her sandbox's checkpoints: %d %s", code, body)
	}
	for _, path := range []string{"/v1/sandboxes/alices", "/v1/sandboxes/alices/sessions", "/v1/sandboxes/alices/files?path=/etc/passwd",
		"/v1/sandboxes/alices/syncs", "/v1/sandboxes/hosts", "/v1/events?sandbox=alices&follow=false", "/v1/snapshots?sandbox=alices",
		"/v1/sandboxes/alices/checkpoints", "/v1/sandboxes/alices/checkpoints/diff?to=1"} {
		code, body := get(t, bob, tt.ts.URL+path)
		if code != http.StatusNotFound && !(code == http.StatusServiceUnavailable && strings.HasPrefix(path, "/v1/snapshots")) {
			t.Errorf("bob GET %s: %d %s", path, code, body)
		}
	}
	if code, body := get(t, root, tt.ts.URL+"/v1/sandboxes/alices"); code != 200 || !strings.Contains(body, `"owner":"alice"`) {
		t.Errorf("the admin GET alices: %d %s", code, body)
	}
	if code, _ := get(t, bob, tt.ts.URL+"/v1/audit"); code != http.StatusForbidden {
		t.Errorf("bob reads the audit log: %d", code)
	}
	if code, _ := get(t, root, tt.ts.URL+"/v1/audit"); code != 200 {
		t.Errorf("the admin reads the audit log: %d", code)
	}
}
