package creds_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/proxy/creds"
)

const placeholder = "paddock-sandbox-token-456"

// recordingMeter is a meter that keeps what the proxy tells it, and refuses every call
// while refuse is set, as a spent budget does.
type recordingMeter struct {
	mu       sync.Mutex
	admitted []creds.Call
	recorded []creds.Answer
	calls    []creds.Call
	refuse   string
}

func (m *recordingMeter) Admit(_ context.Context, c creds.Call) *creds.Refusal {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refuse != "" {
		return &creds.Refusal{Message: m.refuse}
	}
	m.admitted = append(m.admitted, c)
	return nil
}

func (m *recordingMeter) Record(c creds.Call, a creds.Answer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls, m.recorded = append(m.calls, c), append(m.recorded, a)
}

func (m *recordingMeter) last(t *testing.T) (creds.Call, creds.Answer) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.recorded) == 0 {
		t.Fatal("the meter was told nothing")
	}
	return m.calls[len(m.calls)-1], m.recorded[len(m.recorded)-1]
}

func meteredProxy(t *testing.T, env map[string]string) (*httptest.Server, *recordingMeter) {
	t.Helper()
	provs, err := creds.Providers(nil, func(k string) string { return env[k] }, "")
	if err != nil {
		t.Fatal(err)
	}
	p := creds.New(provs, nil, nil)
	m := &recordingMeter{}
	p.SetMeter(m)
	srv := httptest.NewServer(p.Handler("sbid", "sb", placeholder))
	t.Cleanup(srv.Close)
	return srv, m
}

func post(t *testing.T, url, body string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

// sseData returns the data of each event of a stream, decoded.
func sseData(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "data:") {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(line, "data:"))), &v); err != nil {
			t.Fatalf("event data %q: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// TestMetersWhatEachAnswerReports: the usage the meter hears is the usage the scripted
// servers' answers say, in each provider's wire format, streamed or not, with the model
// that answered and the session the agent named; the answer reaches the agent unchanged.
func TestMetersWhatEachAnswerReports(t *testing.T) {
	anth, oa, gem := modeltest.NewAnthropic(t), modeltest.NewOpenAIResponses(t), modeltest.NewGemini(t)
	p, m := meteredProxy(t, map[string]string{"ANTHROPIC_BASE_URL": anth.URL(), "ANTHROPIC_API_KEY": "sk-a",
		"OPENAI_BASE_URL": oa.URL() + "/v1", "OPENAI_API_KEY": "sk-o", "GOOGLE_GEMINI_BASE_URL": gem.URL(), "GEMINI_API_KEY": "sk-g"})
	const prompt = "Say something about metering, please, at some length."

	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "streamed", false: "whole"}[stream]
		t.Run("anthropic "+name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "stream": stream, "max_tokens": 100,
				"messages": []any{map[string]any{"role": "user", "content": prompt}}})
			resp, data := post(t, p.URL+"/anthropic/v1/messages?beta=true", string(body), map[string]string{
				"X-Api-Key": placeholder, "X-Claude-Code-Session-Id": "0b7c9a5e-claude", "Accept-Encoding": "gzip, br"})
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, data)
			}
			var usage map[string]any
			if stream {
				events := sseData(t, data)
				usage = events[len(events)-2]["usage"].(map[string]any) // message_delta, before message_stop
			} else {
				var msg map[string]any
				json.Unmarshal(data, &msg)
				usage = msg["usage"].(map[string]any)
			}
			call, a := m.last(t)
			want := creds.Usage{Input: num(usage["input_tokens"]), Output: num(usage["output_tokens"]),
				CacheRead: modeltest.AnthropicCacheRead, CacheWrite: modeltest.AnthropicCacheWrite}
			if !a.Reported || a.Usage != want || a.Model != "claude-sonnet-4-5" || a.Status != 200 || want.Input == 0 || want.Output == 0 {
				t.Errorf("metered %+v, want usage %+v of claude-sonnet-4-5", a, want)
			}
			if call.SandboxID != "sbid" || call.Sandbox != "sb" || call.Provider != "anthropic" || call.AgentSession != "0b7c9a5e-claude" || call.Duration <= 0 {
				t.Errorf("call %+v", call)
			}
		})
		t.Run("openai "+name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"model": "gpt-5", "stream": stream, "input": prompt})
			resp, data := post(t, p.URL+"/openai/v1/responses", string(body), map[string]string{
				"Authorization": "Bearer " + placeholder, "Session-Id": "codex-thread-1", creds.SessionHeader: "fix-auth"})
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, data)
			}
			var usage map[string]any
			if stream {
				events := sseData(t, data)
				usage = events[len(events)-1]["response"].(map[string]any)["usage"].(map[string]any) // response.completed
			} else {
				var r map[string]any
				json.Unmarshal(data, &r)
				usage = r["usage"].(map[string]any)
			}
			call, a := m.last(t)
			in := num(usage["input_tokens"])
			want := creds.Usage{Input: in - modeltest.OpenAICached, Output: num(usage["output_tokens"]), CacheRead: modeltest.OpenAICached}
			if !a.Reported || a.Usage != want || a.Model != "gpt-5" || want.Output == 0 {
				t.Errorf("metered %+v, want usage %+v of gpt-5", a, want)
			}
			if call.Session != "fix-auth" || call.AgentSession != "codex-thread-1" {
				t.Errorf("call %+v: want session fix-auth, conversation codex-thread-1", call)
			}
			if h := oa.Requests()[len(oa.Requests())-1].Header; h.Get(creds.SessionHeader) != "" {
				t.Errorf("the upstream got paddock's session header: %v", h)
			}
		})
		t.Run("gemini "+name, func(t *testing.T) {
			method := map[bool]string{true: "streamGenerateContent?alt=sse", false: "generateContent"}[stream]
			body := `{"contents":[{"role":"user","parts":[{"text":"` + prompt + `"}]}]}`
			resp, data := post(t, p.URL+"/gemini/v1beta/models/gemini-2.5-flash:"+method, body, map[string]string{"X-Goog-Api-Key": placeholder})
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, data)
			}
			var r map[string]any
			if stream {
				r = sseData(t, data)[0]
			} else {
				json.Unmarshal(data, &r)
			}
			usage := r["usageMetadata"].(map[string]any)
			_, a := m.last(t)
			want := creds.Usage{Input: num(usage["promptTokenCount"]) - modeltest.GeminiCached, Output: num(usage["candidatesTokenCount"]), CacheRead: modeltest.GeminiCached}
			if !a.Reported || a.Usage != want || a.Model != "gemini-2.5-flash" || want.Input <= 0 {
				t.Errorf("metered %+v, want usage %+v of gemini-2.5-flash", a, want)
			}
		})
	}

	// What is not a model call is not metered: Anthropic's token counting.
	before := len(m.recorded)
	post(t, p.URL+"/anthropic/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, map[string]string{"X-Api-Key": placeholder})
	if len(m.recorded) != before {
		t.Errorf("count_tokens was metered")
	}
}

// TestRefusesInTheProvidersOwnErrorShape: a call the meter refuses never reaches the
// provider, and the agent gets the message in the error shape its SDK reads, with a
// status agents do not retry.
func TestRefusesInTheProvidersOwnErrorShape(t *testing.T) {
	anth, oa, gem := modeltest.NewAnthropic(t), modeltest.NewOpenAIResponses(t), modeltest.NewGemini(t)
	p, m := meteredProxy(t, map[string]string{"ANTHROPIC_BASE_URL": anth.URL(), "ANTHROPIC_API_KEY": "sk-a",
		"OPENAI_BASE_URL": oa.URL() + "/v1", "OPENAI_API_KEY": "sk-o", "GOOGLE_GEMINI_BASE_URL": gem.URL(), "GEMINI_API_KEY": "sk-g"})
	const msg = "paddock: the budget of sandbox sb is spent"
	m.refuse = msg
	for _, tc := range []struct{ path, header, value, message string }{
		{"/anthropic/v1/messages", "X-Api-Key", placeholder, "error.message"},
		{"/openai/v1/responses", "Authorization", "Bearer " + placeholder, "error.message"},
		{"/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", "X-Goog-Api-Key", placeholder, "error.message"},
	} {
		resp, data := post(t, p.URL+tc.path, `{"model":"m","stream":true,"messages":[],"input":"x","contents":[]}`, map[string]string{tc.header: tc.value})
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: status %d %s", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var body struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
				Status  string `json:"status"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &body); err != nil || body.Error.Message != msg {
			t.Errorf("%s: body %s", tc.path, data)
		}
		if strings.HasPrefix(tc.path, "/anthropic") && (body.Type != "error" || body.Error.Type != "invalid_request_error") {
			t.Errorf("not Anthropic's error shape: %s", data)
		}
	}
	if n := len(anth.Requests()) + len(oa.Requests()) + len(gem.Requests()); n != 0 {
		t.Errorf("refused calls reached the providers: %d", n)
	}
	if len(m.recorded) != 0 {
		t.Errorf("refused calls were recorded as usage: %v", m.recorded)
	}
}

// TestMetersACompressedAnswer: a provider that compresses its answers (when asked) is
// still metered, and the agent gets the answer readable whatever it said it accepts.
func TestMetersACompressedAnswer(t *testing.T) {
	var askedFor string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		askedFor = r.Header.Get("Accept-Encoding")
		w.Header().Set("Content-Type", "application/json")
		body := `{"id":"m1","type":"message","model":"claude-haiku-4-5","content":[],"usage":{"input_tokens":120,"output_tokens":7,"cache_read_input_tokens":3,"cache_creation_input_tokens":5}}`
		if strings.Contains(askedFor, "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			gz.Write([]byte(body))
			gz.Close()
			return
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(up.Close)
	p, m := meteredProxy(t, map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "sk-a"})
	req, _ := http.NewRequest(http.MethodPost, p.URL+"/anthropic/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", placeholder)
	req.Header.Set("Accept-Encoding", "br") // one the proxy's transport cannot inflate
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "" || !strings.Contains(string(data), `"output_tokens":7`) {
		t.Fatalf("the agent got %q (%s)", data, resp.Header.Get("Content-Encoding"))
	}
	if _, a := m.last(t); a.Usage != (creds.Usage{Input: 120, Output: 7, CacheRead: 3, CacheWrite: 5}) || a.Model != "claude-haiku-4-5" {
		t.Errorf("metered %+v", a)
	}
	if askedFor != "gzip" {
		t.Errorf("the provider was asked for %q, want gzip (the proxy's transport inflates it)", askedFor)
	}
}

// TestASpentBudgetClosesTheProvider: an agent cannot spend past a spent budget by
// another route to the same provider (batches, a doubled slash, a trailing one), and a
// call by an odd spelling that the provider answers with usage is still recorded.
func TestASpentBudgetClosesTheProvider(t *testing.T) {
	var served []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		served = append(served, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","model":"claude-haiku-4-5","usage":{"input_tokens":10,"output_tokens":2}}`)
	}))
	t.Cleanup(up.Close)
	p, m := meteredProxy(t, map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "sk-a"})
	key := map[string]string{"X-Api-Key": placeholder}
	post(t, p.URL+"/anthropic/v1//messages", `{}`, key)
	if _, a := m.last(t); a.Usage.Input != 10 {
		t.Errorf("a call by an odd path was not recorded: %+v", a)
	}
	m.refuse = "paddock: spent"
	for _, path := range []string{"/anthropic/v1/messages/batches", "/anthropic/v1//messages", "/anthropic/v1/messages/", "/anthropic/v1/models"} {
		if resp, data := post(t, p.URL+path, `{}`, key); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(data), "paddock: spent") {
			t.Errorf("%s with a spent budget: %d %s", path, resp.StatusCode, data)
		}
	}
	if len(served) != 1 {
		t.Errorf("the provider served %v after the budget was spent", served[1:])
	}
}
