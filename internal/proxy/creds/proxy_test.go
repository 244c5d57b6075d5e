package creds

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/testenv"
)

const token = "paddock-sandbox-token-123"

// upstream records what a provider would receive.
type upstream struct {
	mu   sync.Mutex
	reqs []*http.Request
	srv  *httptest.Server
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.reqs = append(u.reqs, r.Clone(r.Context()))
		u.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/stream") {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				fmt.Fprintf(w, "event: e\ndata: %d\n\n", i)
				w.(http.Flusher).Flush()
				time.Sleep(150 * time.Millisecond)
			}
			return
		}
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "ok %s", r.URL.Path)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) last(t *testing.T) *http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatal("the upstream received nothing")
	}
	return u.reqs[len(u.reqs)-1]
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

func proxyFor(t *testing.T, env map[string]string, settings map[string]Settings) *httptest.Server {
	provs, err := Providers(settings, func(k string) string { return env[k] }, "")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(provs, nil, nil).Handler("id", "sb", token))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, url string, headers map[string]string) (int, string) {
	req, _ := http.NewRequest(method, url, strings.NewReader(`{"model":"x"}`))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestInjectsTheRealKeyAndStripsThePlaceholder(t *testing.T) {
	up := newUpstream(t)
	for _, tc := range []struct {
		provider, path, header, want string
		sent                         map[string]string
		env                          map[string]string
	}{
		{"anthropic", "/anthropic/v1/messages?beta=true", "X-Api-Key", "sk-ant-real",
			map[string]string{"X-Api-Key": token, "Authorization": "Bearer " + token},
			map[string]string{"ANTHROPIC_BASE_URL": up.srv.URL, "ANTHROPIC_API_KEY": "sk-ant-real"}},
		{"openai", "/openai/v1/responses", "Authorization", "Bearer sk-openai-real",
			map[string]string{"Authorization": "Bearer " + token},
			map[string]string{"OPENAI_BASE_URL": up.srv.URL + "/v1", "OPENAI_API_KEY": "sk-openai-real"}},
		{"gemini", "/gemini/v1beta/models/m:streamGenerateContent?alt=sse&key=" + token, "X-Goog-Api-Key", "gem-real",
			map[string]string{},
			map[string]string{"GOOGLE_GEMINI_BASE_URL": up.srv.URL, "GEMINI_API_KEY": "gem-real"}},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			p := proxyFor(t, tc.env, nil)
			code, body := do(t, "POST", p.URL+tc.path, tc.sent)
			if code != 200 {
				t.Fatalf("status %d: %s", code, body)
			}
			got := up.last(t)
			if v := got.Header.Get(tc.header); v != tc.want {
				t.Errorf("upstream %s = %q, want %q", tc.header, v, tc.want)
			}
			for k, vs := range got.Header {
				for _, v := range vs {
					if strings.Contains(v, token) {
						t.Errorf("the placeholder reached the upstream in %s", k)
					}
				}
			}
			if strings.Contains(got.URL.RawQuery, token) || got.URL.Query().Has("key") {
				t.Errorf("the placeholder reached the upstream in the query %q", got.URL.RawQuery)
			}
			if got.Host != strings.TrimPrefix(up.srv.URL, "http://") {
				t.Errorf("Host %q", got.Host)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	up := newUpstream(t)
	p := proxyFor(t, map[string]string{"ANTHROPIC_BASE_URL": up.srv.URL, "ANTHROPIC_API_KEY": "sk-real"}, nil)
	for _, tc := range []struct {
		name, path string
		headers    map[string]string
		status     int
		body       string
	}{
		{"no placeholder", "/anthropic/v1/messages", nil, 401, "placeholder key"},
		{"wrong placeholder", "/anthropic/v1/messages", map[string]string{"X-Api-Key": "guess"}, 401, "placeholder key"},
		{"not an API path", "/anthropic/admin", map[string]string{"X-Api-Key": token}, 403, "not an API path"},
		{"dot dot", "/anthropic/v1/../admin", map[string]string{"X-Api-Key": token}, 403, "not an API path"},
		{"unknown provider", "/nope/v1/x", map[string]string{"X-Api-Key": token}, 404, "no provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := up.count()
			code, body := do(t, "POST", p.URL+tc.path, tc.headers)
			if code != tc.status || !strings.Contains(body, tc.body) {
				t.Fatalf("got %d %q, want %d containing %q", code, body, tc.status, tc.body)
			}
			if up.count() != before {
				t.Fatal("a refused request reached the upstream")
			}
		})
	}
}

func TestMissingKeySaysWhatToSet(t *testing.T) {
	p := proxyFor(t, map[string]string{}, nil)
	code, body := do(t, "POST", p.URL+"/anthropic/v1/messages", map[string]string{"X-Api-Key": token})
	if code != 502 || !strings.Contains(body, "set ANTHROPIC_API_KEY in the daemon's environment") {
		t.Fatalf("got %d %q", code, body)
	}
}

func TestKeyCommandAndCustomProvider(t *testing.T) {
	up := newUpstream(t)
	p := proxyFor(t, nil, map[string]Settings{
		"anthropic": {BaseURL: up.srv.URL, KeyCommand: "echo sk-from-command"},
		"local-llm": {BaseURL: up.srv.URL + "/v1", Key: "sk-literal"},
	})
	if code, body := do(t, "POST", p.URL+"/anthropic/v1/messages", map[string]string{"X-Api-Key": token}); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if got := up.last(t).Header.Get("X-Api-Key"); got != "sk-from-command" {
		t.Fatalf("key from command: %q", got)
	}
	if code, body := do(t, "POST", p.URL+"/local-llm/chat/completions", map[string]string{"Authorization": "Bearer " + token}); code != 200 || body != "ok /v1/chat/completions" {
		t.Fatalf("custom provider: %d %s", code, body)
	}
	if got := up.last(t).Header.Get("Authorization"); got != "Bearer sk-literal" {
		t.Fatalf("custom provider auth: %q", got)
	}
}

// TestStreamsWithoutBuffering: each Server-Sent Event arrives when the upstream sends
// it, not when the response ends.
func TestStreamsWithoutBuffering(t *testing.T) {
	up := newUpstream(t)
	p := proxyFor(t, map[string]string{"ANTHROPIC_BASE_URL": up.srv.URL, "ANTHROPIC_API_KEY": "k"}, nil)
	req, _ := http.NewRequest("POST", p.URL+"/anthropic/v1/stream", nil)
	req.Header.Set("X-Api-Key", token)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "event: e\n" {
		t.Fatalf("first line %q %v", line, err)
	}
	if waited := time.Since(start); waited > 300*time.Millisecond {
		t.Fatalf("the first event took %v: the proxy buffered the stream (the upstream spends 450 ms on all three)", waited)
	}
}

func TestSandboxEnv(t *testing.T) {
	provs, _ := Providers(map[string]Settings{"my-llm": {BaseURL: "http://h/v1"}}, func(string) string { return "" }, "")
	env := strings.Join(New(provs, nil, nil).SandboxEnv("http://127.0.0.1:4180", "tok"), "\n")
	for _, want := range []string{
		"ANTHROPIC_BASE_URL=http://127.0.0.1:4180/anthropic", "ANTHROPIC_API_KEY=tok",
		"OPENAI_BASE_URL=http://127.0.0.1:4180/openai/v1", "OPENAI_API_KEY=tok",
		"GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:4180/gemini", "GEMINI_API_KEY=tok",
		"PADDOCK_MY_LLM_BASE_URL=http://127.0.0.1:4180/my-llm",
	} {
		if !strings.Contains(env, want) {
			t.Errorf("sandbox env lacks %s:\n%s", want, env)
		}
	}
}

// TestKeepAliveStreamsAreNotCutShort: many streamed answers on one keep-alive connection
// (curl reuses it across URLs) all arrive whole. net/http can cancel a server request's
// context on a keep-alive connection mid-answer; the proxy must not pass that on.
func TestKeepAliveStreamsAreNotCutShort(t *testing.T) {
	testenv.Program(t, "curl", "apt-get install curl")
	var cancelled atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: start\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(10 * time.Millisecond)
		if r.Context().Err() != nil {
			cancelled.Add(1)
		}
		fmt.Fprint(w, "event: stop\n\n")
	}))
	defer up.Close()
	p := proxyFor(t, map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "k"}, nil)
	args := []string{"-sS", "-H", "x-api-key: " + token}
	const n = 150
	for range n {
		args = append(args, "-d", "{}", p.URL+"/anthropic/v1/messages")
	}
	out, err := exec.Command("curl", args...).CombinedOutput()
	if got := strings.Count(string(out), "event: stop"); err != nil || got != n {
		t.Fatalf("%d of %d answers arrived whole (%v)", got, n, err)
	}
	if c := cancelled.Load(); c != 0 {
		t.Fatalf("%d upstream requests were cancelled mid-answer", c)
	}
}
