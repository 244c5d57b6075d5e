package creds_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/proxy/creds"
)

// BenchmarkLogin measures what a subscription login costs the credential proxy next to
// an API key: the same upstream, one proxy with the key, one with a Claude login (read
// from its file at each request, the placeholder checked among the sandbox's), taking
// turns in the same run. It reports the medians of a whole answer and their ratio.
func BenchmarkLogin(b *testing.B) {
	up := benchUpstream(b)
	env := map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "sk-bench"}
	proxy := func(login bool) *httptest.Server {
		provs, err := creds.Providers(nil, func(k string) string { return env[k] }, "")
		if err != nil {
			b.Fatal(err)
		}
		p := creds.New(provs, nil, nil)
		logins := creds.NewLogins(b.TempDir(), nil, func(string) string { return "" }, nil)
		if login {
			if err := logins.Save(creds.LoginClaude, creds.Login{AccessToken: "sk-ant-oat01-bench", Source: "token"}); err != nil {
				b.Fatal(err)
			}
		}
		p.SetLogins(logins)
		srv := httptest.NewServer(p.Handler("sbid", "sb", placeholder))
		b.Cleanup(srv.Close)
		return srv
	}
	key, login := proxy(false), proxy(true)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	one := func(base, auth, value string) time.Duration {
		req, _ := http.NewRequest(http.MethodPost, base+"/anthropic/v1/messages?whole", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":10}`))
		req.Header.Set(auth, value)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	n := max(b.N, 400)
	var withKey, withLogin []time.Duration
	b.ResetTimer()
	for range n {
		withKey = append(withKey, one(key.URL, "X-Api-Key", placeholder))
		withLogin = append(withLogin, one(login.URL, "Authorization", "Bearer "+creds.ClaudePlaceholder(placeholder)))
	}
	b.StopTimer()
	med := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Nanoseconds()) / 1e3
	}
	k, l := med(withKey), med(withLogin)
	b.ReportMetric(k, "key-median-µs")
	b.ReportMetric(l-k, "login-added-median-µs")
	b.ReportMetric(l/k, "login-x-key-median")
}
