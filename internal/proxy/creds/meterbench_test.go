package creds_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/metering"
	"github.com/paddockhq/paddock/internal/proxy/creds"
	"github.com/paddockhq/paddock/internal/store"
)

// benchUpstream answers like the Messages API: a JSON message with its usage, or a
// stream of 40 events (message_start with the input usage, text deltas, message_delta
// with the output's) whose first event comes 5 ms before the rest.
func benchUpstream(b *testing.B) *httptest.Server {
	text := `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"some words of the answer"}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if !strings.HasSuffix(r.URL.RawQuery, "stream") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"m","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],`+
				`"usage":{"input_tokens":1200,"output_tokens":40,"cache_read_input_tokens":9000,"cache_creation_input_tokens":300}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `event: message_start`+"\n"+`data: {"type":"message_start","message":{"id":"m","model":"claude-sonnet-4-5","usage":{"input_tokens":1200,"output_tokens":1,"cache_read_input_tokens":9000,"cache_creation_input_tokens":300}}}`+"\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(5 * time.Millisecond)
		for range 38 {
			io.WriteString(w, "event: content_block_delta\ndata: "+text+"\n\n")
		}
		io.WriteString(w, `event: message_delta`+"\n"+`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":412}}`+"\n\n")
		io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkMetering measures what metering adds to the credential proxy: the same proxy
// over the same upstream, with the daemon's meter (recording into SQLite) and without,
// taking turns in the same run. It reports the medians of a whole JSON answer and of
// the time to a stream's first event, and the ratios of metered to unmetered.
func BenchmarkMetering(b *testing.B) {
	up := benchUpstream(b)
	env := map[string]string{"ANTHROPIC_BASE_URL": up.URL, "ANTHROPIC_API_KEY": "sk-bench"}
	proxy := func(metered bool) *httptest.Server {
		provs, err := creds.Providers(nil, func(k string) string { return env[k] }, "")
		if err != nil {
			b.Fatal(err)
		}
		p := creds.New(provs, nil, nil)
		if metered {
			st, err := store.Open(b.Context(), filepath.Join(b.TempDir(), "state.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			prices, _ := metering.NewPrices(nil)
			m, err := metering.New(b.Context(), metering.Options{Store: st, Prices: prices})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(m.Close)
			p.SetMeter(m)
		}
		srv := httptest.NewServer(p.Handler("sbid", "sb", placeholder))
		b.Cleanup(srv.Close)
		return srv
	}
	off, on := proxy(false), proxy(true)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	// one returns the time to the first byte of the body and to its end.
	one := func(base, query string) (time.Duration, time.Duration) {
		req, _ := http.NewRequest(http.MethodPost, base+"/anthropic/v1/messages?"+query, strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":10}`))
		req.Header.Set("X-Api-Key", placeholder)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if _, err := br.Peek(1); err != nil {
			b.Fatal(err)
		}
		first := time.Since(start)
		io.Copy(io.Discard, br)
		resp.Body.Close()
		return first, time.Since(start)
	}
	n := max(b.N, 400)
	var offWhole, onWhole, offFirst, onFirst []time.Duration
	b.ResetTimer()
	for i := range n {
		_, d := one(off.URL, "whole")
		offWhole = append(offWhole, d)
		_, d = one(on.URL, "whole")
		onWhole = append(onWhole, d)
		if i%8 == 0 { // streams take 5 ms each: fewer of them
			f, _ := one(off.URL, "stream")
			offFirst = append(offFirst, f)
			f, _ = one(on.URL, "stream")
			onFirst = append(onFirst, f)
		}
	}
	b.StopTimer()
	med := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Nanoseconds()) / 1e3
	}
	offW, onW, offF, onF := med(offWhole), med(onWhole), med(offFirst), med(onFirst)
	b.ReportMetric(offW, "off-median-µs")
	b.ReportMetric(onW-offW, "metering-added-median-µs")
	b.ReportMetric(onW/offW, "on-x-off-median")
	b.ReportMetric(onF-offF, "metering-added-first-event-µs")
	b.ReportMetric(onF/offF, "on-x-off-first-event")
	if testing.Verbose() {
		fmt.Printf("whole answer median: off %.0f µs, on %.0f µs; first event median: off %.0f µs, on %.0f µs\n", offW, onW, offF, onF)
	}
}
