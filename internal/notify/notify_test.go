package notify

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/notify/pushtest"
	"github.com/paddockhq/paddock/internal/store"
)

func newNotifier(t *testing.T, cfg config.Notify) (*Notifier, *store.Store) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	n, err := New(Options{Config: cfg, Store: st, StateDir: dir, Logger: slog.New(slog.DiscardHandler),
		BaseURL: func() string { return "http://127.0.0.1:7777" }, Backoff: 10 * time.Millisecond,
		Getenv: func(k string) string { return map[string]string{"NTFY_TOKEN": "tk_secret"}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return n, st
}

func status(sandbox, session, s string, at time.Time) events.Event {
	return events.Event{Time: at, Sandbox: sandbox, Session: session, Kind: "session-status", Attrs: map[string]string{"status": s}}
}

func TestDecide(t *testing.T) {
	n, _ := newNotifier(t, config.Notify{})
	t0 := time.Now()
	steps := []struct {
		ev   events.Event
		want string // the title, or "" for none
	}{
		{status("repo", "fix", "idle", t0), ""}, // an agent that starts idle finished nothing
		{status("repo", "fix", "working", t0.Add(time.Second)), ""},
		{status("repo", "fix", "idle", t0.Add(2*time.Second)), "repo/fix finished"},
		{status("repo", "fix", "working", t0.Add(3*time.Second)), ""},
		{status("repo", "fix", "waiting", t0.Add(4*time.Second)), "repo/fix is waiting for you"},
		{status("repo", "fix", "working", t0.Add(5*time.Second)), ""},
		// The same news of the same session within 30 s is not repeated...
		{status("repo", "fix", "waiting", t0.Add(6*time.Second)), ""},
		// ...but other news of it is, and news of another session.
		{status("repo", "other", "waiting", t0.Add(6*time.Second)), "repo/other is waiting for you"},
		{events.Event{Time: t0.Add(7 * time.Second), Sandbox: "repo", Session: "fix", Kind: "session-exited", Detail: "fix exited with status 1"}, "repo/fix exited"},
		{status("repo", "fix", "waiting", t0.Add(40*time.Second)), "repo/fix is waiting for you"},
		// Events of no session, and other kinds, are no news.
		{events.Event{Sandbox: "repo", Kind: "stopped"}, ""},
		// A budget's warning and its end are news, for a sandbox or a session.
		{events.Event{Time: t0.Add(41 * time.Second), Sandbox: "repo", Kind: "budget-warning"}, "repo: 80% of its budget spent"},
		{events.Event{Time: t0.Add(42 * time.Second), Sandbox: "repo", Kind: "budget-spent"}, "repo: budget spent, the agent is stopped"},
		{events.Event{Time: t0.Add(43 * time.Second), Sandbox: "repo", Session: "fix", Kind: "budget-spent"}, "repo/fix: budget spent, the agent is stopped"},
		// Each alarm is news, of a sandbox or of a session, however close to the last.
		{events.Event{Time: t0.Add(44 * time.Second), Sandbox: "repo", Kind: "alarm", Attrs: map[string]string{"id": "1"}}, "repo: alarm: the agent went for its own controls"},
		{events.Event{Time: t0.Add(44 * time.Second), Sandbox: "repo", Kind: "alarm", Attrs: map[string]string{"id": "2"}}, "repo: alarm: the agent went for its own controls"},
		{events.Event{Time: t0.Add(45 * time.Second), Sandbox: "repo", Session: "fix", Kind: "alarm", Attrs: map[string]string{"id": "3"}}, "repo/fix: alarm: the agent went for its own controls"},
	}
	for i, s := range steps {
		msg, ok := n.decide(s.ev)
		if got := map[bool]string{true: msg.Title}[ok]; got != s.want {
			t.Fatalf("step %d (%s %v): got %q, want %q", i, s.ev.Kind, s.ev.Attrs, got, s.want)
		}
		if ok && strings.TrimSuffix(msg.URL, "/") != strings.TrimSuffix("http://127.0.0.1:7777/s/repo/"+s.ev.Session, "/") {
			t.Fatalf("step %d: link %q", i, msg.URL)
		}
	}

	// Only the events asked for.
	n, _ = newNotifier(t, config.Notify{Events: []string{"waiting"}, URL: "https://paddock.example/"})
	if _, ok := n.decide(events.Event{Time: t0, Sandbox: "r", Session: "s", Kind: "session-exited"}); ok {
		t.Fatal("exited notified though only waiting was asked for")
	}
	msg, ok := n.decide(status("r", "a b", "waiting", t0))
	if !ok || msg.URL != "https://paddock.example/s/r/a%20b" {
		t.Fatalf("waiting: %v %+v", ok, msg)
	}
}

// A task's news: an attempt that passed its checks, every attempt done, a landing that
// needs an answer, a landing; each linking to the task's page in the web UI, and left
// out when [notify] events does not ask for tasks.
func TestDecideTasks(t *testing.T) {
	n, _ := newNotifier(t, config.Notify{URL: "https://paddock.example"})
	t0 := time.Now()
	ev := func(kind, attempt string, at time.Duration) events.Event {
		e := events.Event{Time: t0.Add(at), Sandbox: "fix-login-1", Kind: kind, Detail: "the detail", Attrs: map[string]string{"task": "fix login"}}
		if attempt != "" {
			e.Attrs["attempt"] = attempt
		}
		return e
	}
	for i, s := range []struct {
		ev        events.Event
		title, to string
	}{
		{ev("task-attempt-passed", "2", 0), "fix login: attempt 2 passed its checks", "/t/fix%20login/2"},
		{ev("task-attempt-failed", "1", time.Second), "", ""}, // a failure is read in the task, not pushed
		{ev("task-done", "", 2*time.Second), "fix login: every attempt is done", "/t/fix%20login"},
		{ev("task-conflict", "3", 3*time.Second), "fix login: attempt 3 conflicts: it needs an answer", "/t/fix%20login/3"},
		{ev("task-landed", "2", 4*time.Second), "fix login: attempt 2 landed", "/t/fix%20login/2"},
	} {
		msg, ok := n.decide(s.ev)
		if got := map[bool]string{true: msg.Title}[ok]; got != s.title {
			t.Fatalf("step %d (%s): got %q, want %q", i, s.ev.Kind, got, s.title)
		}
		if ok && (msg.URL != "https://paddock.example"+s.to || msg.Body != "the detail" || msg.What != Task) {
			t.Fatalf("step %d: %+v", i, msg)
		}
	}
	// A plain sandbox's branch through the merge queue (merge --queue): no task, its
	// sandbox and branch named, the link to the sandbox.
	for i, s := range []struct{ kind, title string }{
		{"task-conflict", "web: main conflicts with trunk: it needs an answer"},
		{"task-landed", "web: main landed on trunk"},
	} {
		plain := events.Event{Time: t0.Add(5 * time.Second), Sandbox: "web", Kind: s.kind, Detail: "the detail", Attrs: map[string]string{"sandbox": "web", "branch": "main", "into": "trunk"}}
		if msg, ok := n.decide(plain); !ok || msg.Title != s.title || !strings.HasPrefix(msg.URL, "https://paddock.example/") || strings.Contains(msg.URL, "/t/") {
			t.Fatalf("plain step %d: %v %+v", i, ok, msg)
		}
	}
	n, _ = newNotifier(t, config.Notify{Events: []string{"waiting"}})
	if _, ok := n.decide(ev("task-landed", "1", 0)); ok {
		t.Fatal("a landing notified though only waiting was asked for")
	}
}

// receiver records what a webhook receives.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
	body []string
	// fail answers this status to the first requests, while > 0 of them remain.
	fail     int
	failWith int
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.reqs = append(rc.reqs, r)
		rc.body = append(rc.body, string(b))
		if rc.fail > 0 {
			rc.fail--
			w.WriteHeader(rc.failWith)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) wait(t *testing.T, n int) ([]*http.Request, []string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		rc.mu.Lock()
		if len(rc.reqs) >= n {
			defer rc.mu.Unlock()
			return rc.reqs, rc.body
		}
		rc.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the webhook got %d requests, want %d", len(rc.reqs), n)
	return nil, nil
}

func TestWebhookFormats(t *testing.T) {
	msg := Message{What: Waiting, Sandbox: "repo", Session: "fix", Title: "repo/fix is waiting for you",
		Body: "The agent needs an answer or a permission.", URL: "http://127.0.0.1:7777/s/repo/fix"}
	for _, tc := range []struct {
		format string
		check  func(r *http.Request, body string) string
	}{
		{"ntfy", func(r *http.Request, body string) string {
			if r.Header.Get("Title") != msg.Title || r.Header.Get("Click") != msg.URL || r.Header.Get("Tags") != "raising_hand" ||
				r.Header.Get("Priority") != "high" || body != msg.Body {
				return "ntfy headers or body"
			}
			return ""
		}},
		{"slack", func(r *http.Request, body string) string {
			var v map[string]string
			if json.Unmarshal([]byte(body), &v) != nil || r.Header.Get("Content-Type") != "application/json" ||
				v["text"] != "*repo/fix is waiting for you*\nThe agent needs an answer or a permission.\n<http://127.0.0.1:7777/s/repo/fix|Open in paddock>" {
				return "slack body"
			}
			return ""
		}},
		{"json", func(r *http.Request, body string) string {
			var v Message
			if json.Unmarshal([]byte(body), &v) != nil || v.Sandbox != "repo" || v.Session != "fix" || v.What != "waiting" || v.URL != msg.URL {
				return "json body"
			}
			return ""
		}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			rc := newReceiver(t)
			n, _ := newNotifier(t, config.Notify{Webhook: rc.srv.URL + "/topic", Format: tc.format,
				Headers: map[string]string{"Authorization": "Bearer ${NTFY_TOKEN}"}})
			if err := n.webhook(context.Background(), msg); err != nil {
				t.Fatal(err)
			}
			reqs, bodies := rc.wait(t, 1)
			if reqs[0].Method != http.MethodPost || reqs[0].URL.Path != "/topic" || reqs[0].Header.Get("Authorization") != "Bearer tk_secret" {
				t.Fatalf("request %s %s, Authorization %q", reqs[0].Method, reqs[0].URL.Path, reqs[0].Header.Get("Authorization"))
			}
			if what := tc.check(reqs[0], bodies[0]); what != "" {
				t.Fatalf("%s wrong: headers %v body %q", what, reqs[0].Header, bodies[0])
			}
		})
	}
}

func TestRetries(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// A webhook that is down for a moment gets the message once it is back.
	rc := newReceiver(t)
	rc.fail, rc.failWith = 2, http.StatusServiceUnavailable
	n, _ := newNotifier(t, config.Notify{Webhook: rc.srv.URL})
	bus := events.NewBus()
	n.Start(ctx, bus)
	bus.Publish(status("repo", "fix", "waiting", time.Now()))
	reqs, _ := rc.wait(t, 3)
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 2 refused and 1 accepted", len(reqs))
	}

	// One that refuses the request itself (400) is not asked again.
	rc = newReceiver(t)
	rc.fail, rc.failWith = 100, http.StatusBadRequest
	n, _ = newNotifier(t, config.Notify{Webhook: rc.srv.URL})
	n.Send(Message{What: Waiting, Sandbox: "r", Session: "s", Title: "t"})
	go n.work(ctx)
	rc.wait(t, 1)
	time.Sleep(200 * time.Millisecond) // several backoffs
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.reqs) != 1 {
		t.Fatalf("a 400 was tried %d times", len(rc.reqs))
	}
}

func TestPush(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := pushtest.Start(t)
	n, st := newNotifier(t, config.Notify{Contact: "mailto:ops@example.com"})
	phone, laptop := svc.Subscribe(), svc.Subscribe()
	var ids []int64
	for _, s := range []pushtest.Subscription{phone, laptop} {
		id, err := n.Subscribe(ctx, store.PushSubscription{Endpoint: s.Endpoint, P256DH: s.Keys.P256DH, Auth: s.Keys.Auth, Label: "Chrome"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	bus := events.NewBus()
	n.Start(ctx, bus)
	bus.Publish(status("repo", "fix", "waiting", time.Now()))

	pushes := svc.Wait(2, 10*time.Second)
	if len(pushes) != 2 {
		t.Fatalf("%d pushes, want one to each browser; refused: %v", len(pushes), svc.Errors())
	}
	for _, p := range pushes {
		var got pushPayload
		if err := json.Unmarshal(p.Payload, &got); err != nil {
			t.Fatalf("payload %q: %v", p.Payload, err)
		}
		if got.Title != "repo/fix is waiting for you" || got.URL != "http://127.0.0.1:7777/s/repo/fix" || got.Tag != "paddock:repo/fix" {
			t.Fatalf("payload %+v", got)
		}
		if p.Key != n.PublicKey() || p.Subject != "mailto:ops@example.com" || p.Urgency != "high" || p.TTL <= 0 {
			t.Fatalf("push %+v", p)
		}
	}

	// A browser that unsubscribed (the push service answers 410) is forgotten.
	svc.Answer(laptop.Endpoint, http.StatusGone)
	results, err := n.TestAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].Error != "" || !strings.Contains(results[1].Error, "410") {
		t.Fatalf("test results %+v", results)
	}
	subs, err := st.PushSubscriptions(ctx)
	if err != nil || len(subs) != 1 || subs[0].ID != ids[0] || subs[0].LastSent.IsZero() {
		t.Fatalf("subscriptions after a 410: %+v %v", subs, err)
	}

	// Keys a browser could not have made are refused.
	if _, err := n.Subscribe(ctx, store.PushSubscription{Endpoint: svc.URL() + "/push/x", P256DH: "AAAA", Auth: phone.Keys.Auth}); err == nil ||
		!strings.Contains(err.Error(), "p256dh") {
		t.Fatalf("a bad key: %v", err)
	}
	if _, err := n.Subscribe(ctx, store.PushSubscription{Endpoint: "javascript:alert(1)", P256DH: phone.Keys.P256DH, Auth: phone.Keys.Auth}); err == nil {
		t.Fatal("a javascript: endpoint was taken")
	}
}

func TestVAPIDKeysKept(t *testing.T) {
	dir := t.TempDir()
	a, err := loadVAPID(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "vapid.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("vapid.json: %v %v", fi.Mode(), err)
	}
	b, err := loadVAPID(dir)
	if err != nil || a != b {
		t.Fatalf("the keys changed on the second load: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "vapid.json"), []byte("{}"), 0o600)
	if _, err := loadVAPID(dir); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("a broken key file: %v", err)
	}
}
