package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/clitest"
)

// latencyClient runs inside the sandbox and on the host alike: N sequential requests on
// one keep-alive connection, then the median latency (µs), the requests per second and
// the median time to the first Server-Sent Event of a streamed answer (µs; the upstream
// sends its headers with the first event).
const latencyClient = `
import http.client, statistics, sys, time
host, port, path, n, key, tunnel = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
def connect():
    c = http.client.HTTPConnection(host, port)
    if tunnel:
        h, p = tunnel.split(":")
        c.set_tunnel(h, int(p))
    return c
c = connect()
lat, first = [], []
for i in range(n):
    t = time.perf_counter()
    c.request("POST", path, body=b"{}", headers={"x-api-key": key, "content-type": "application/json"})
    r = c.getresponse()  # the headers come with the first event: the upstream flushes them together
    first.append(time.perf_counter() - t)
    r.read()
    lat.append(time.perf_counter() - t)
print(int(statistics.median(lat) * 1e6), int(n / sum(lat)), int(statistics.median(first) * 1e6))
`

// BenchmarkProxies measures the credential proxy and the egress proxy as a sandbox sees
// them (a client inside the sandbox, through the agent's tunnel and the daemon) against
// the same client talking to the same upstream directly from the host, in the same run.
// The upstream streams two events 20 ms apart, so time to first event shows buffering.
func BenchmarkProxies(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		b.Skip("python3 is not installed")
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		// Answers report their usage as the Messages API does, so that the daemon's
		// metering reads them (the credential proxy meters POST /v1/messages).
		if !strings.HasSuffix(r.URL.Query().Get("mode"), "stream") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"type":"message","model":"claude-sonnet-4-5","usage":{"input_tokens":1200,"output_tokens":40,"cache_read_input_tokens":9000,"cache_creation_input_tokens":300}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":1200,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
		fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":40}}\n\nevent: message_stop\ndata: {}\n\n")
	}))
	defer upstream.Close()
	port := strings.TrimPrefix(upstream.URL, "http://127.0.0.1:")
	b.Setenv("ANTHROPIC_BASE_URL", upstream.URL)
	b.Setenv("ANTHROPIC_API_KEY", "sk-bench")

	home, err := os.MkdirTemp("", "pdk")
	if err != nil {
		b.Fatal(err)
	}
	os.Chmod(home, 0o711)
	b.Setenv("PADDOCK_HOME", home)
	defer clitest.Teardown(home, nil, "")
	defer func() {
		if b.Failed() {
			data, _ := os.ReadFile(filepath.Join(home, "state", "daemon.log"))
			b.Logf("daemon log:\n%s", data)
		}
	}()
	repo := filepath.Join(home, "proxyrepo")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	ctx := context.Background()
	var out, errOut strings.Builder
	f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	run := func(args ...string) string {
		out.Reset()
		if code := cli.Run(ctx, f, args); code != 0 {
			b.Fatalf("paddock %v: exit %d\n%s\n%s", args[:3], code, out.String(), errOut.String())
		}
		return out.String()
	}
	run("up", repo)
	run("net", "allow", "localhost:"+port, "--sandbox", "proxyrepo")
	token := strings.TrimSpace(run("exec", "proxyrepo", "--", "sh", "-c", "echo $ANTHROPIC_API_KEY"))

	n := strconv.Itoa(max(b.N, 50))
	measure := func(inSandbox bool, args ...string) [3]float64 {
		var text string
		if inSandbox {
			text = run(append([]string{"exec", "proxyrepo", "--", "python3", "-c", latencyClient}, args...)...)
		} else {
			o, err := exec.Command("python3", append([]string{"-c", latencyClient}, args...)...).Output()
			if err != nil {
				b.Fatal(err)
			}
			text = string(o)
		}
		var r [3]float64
		if _, err := fmt.Sscan(text, &r[0], &r[1], &r[2]); err != nil {
			b.Fatalf("client output %q: %v", text, err)
		}
		return r
	}
	b.ResetTimer()
	direct := measure(false, "127.0.0.1", port, "/v1/messages", n, "sk-bench", "")
	creds := measure(true, "127.0.0.1", "4180", "/anthropic/v1/messages", n, token, "")
	egress := measure(true, "127.0.0.1", "3128", "/v1/messages", n, "x", "localhost:"+port)
	ns := strconv.Itoa(max(b.N/5, 20))
	directStream := measure(false, "127.0.0.1", port, "/v1/messages?mode=stream", ns, "sk-bench", "")
	credsStream := measure(true, "127.0.0.1", "4180", "/anthropic/v1/messages?mode=stream", ns, token, "")
	b.StopTimer()

	b.ReportMetric(direct[0], "direct-median-µs")
	b.ReportMetric(creds[0]-direct[0], "creds-added-median-µs")
	b.ReportMetric(egress[0]-direct[0], "egress-added-median-µs")
	b.ReportMetric(direct[1], "direct-req/s")
	b.ReportMetric(creds[1]/direct[1], "creds-x-direct-req/s")
	b.ReportMetric(egress[1]/direct[1], "egress-x-direct-req/s")
	// Time to the first event of a stream whose second event comes 20 ms later: a proxy
	// that buffered would add those 20 ms.
	b.ReportMetric(credsStream[2]-directStream[2], "creds-added-first-event-µs")

	// Every call through the credential proxy was metered (BenchmarkMetering in
	// internal/proxy/creds compares metering on and off).
	var rep struct{ Total struct{ Requests int } }
	if err := json.Unmarshal([]byte(run("usage", "proxyrepo", "--json")), &rep); err != nil || rep.Total.Requests < 2 {
		b.Fatalf("paddock usage after the benchmark: %+v, %v", rep, err)
	}
}
