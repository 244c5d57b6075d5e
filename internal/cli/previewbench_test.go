package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/testenv"
)

// previewServer answers GET / with a small page over HTTP/1.1 keep-alive.
const previewServer = `
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes
    def do_GET(self):
        body = b"<h1>hello</h1>" * 8
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
`

// getClient makes N sequential GETs on one keep-alive connection and prints the median
// latency in µs; the same program runs inside the sandbox (direct) and on the host
// (through the preview), so the difference is the preview's.
const getClient = `
import http.client, statistics, sys, time
host, port, n, hosthdr, cookie, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
c = http.client.HTTPConnection(host, port)
hdrs = {}
if hosthdr: hdrs["Host"] = hosthdr
if cookie: hdrs["Cookie"] = cookie
lat = []
for i in range(n):
    t = time.perf_counter()
    c.request("GET", path, headers=hdrs)
    r = c.getresponse()
    r.read()
    if r.status != 200: sys.exit("status %d" % r.status)
    lat.append(time.perf_counter() - t)
print(int(statistics.median(lat) * 1e6))
`

// BenchmarkPreview measures the port preview (a browser's request to
// PORT-SANDBOX.localhost on paddock web, through the daemon and the sandbox agent's
// tunnel) against a request to the same server from inside the sandbox, in the same run.
func BenchmarkPreview(b *testing.B) {
	testenv.Program(b, "python3", "apt-get install python3")
	run, _ := upRepo(b)
	run("chat", "repo", "--new", "web", "--agent", "shell", "--command", "exec python3 -c '"+previewServer+"' 8123")
	var st wire.WebStatus
	if err := json.Unmarshal([]byte(run("web", "--listen", "127.0.0.1:0", "--json")), &st); err != nil {
		b.Fatal(err)
	}
	webPort := st.Listen[strings.LastIndex(st.Listen, ":")+1:]
	for i := 0; ; i++ {
		if strings.Contains(run("ports", "repo"), "8123") {
			break
		}
		if i == 100 {
			b.Fatal("the server inside never listened")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Signed in as a browser is: the one-time link redeemed for the preview's cookie.
	link := strings.TrimSpace(run("open", "repo:8123", "--print"))
	req, _ := http.NewRequest(http.MethodGet, link, nil)
	req.Host = "8123-repo.localhost:" + webPort
	req.URL.Host = "127.0.0.1:" + webPort
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	var cookie string
	for _, c := range resp.Cookies() {
		cookie = c.Name + "=" + c.Value
	}
	if cookie == "" {
		b.Fatalf("redeeming the preview link gave no cookie: %s", resp.Status)
	}

	n := strconv.Itoa(max(b.N, 200))
	measure := func(inSandbox bool, args ...string) float64 {
		var text string
		if inSandbox {
			text = run(append([]string{"exec", "repo", "--", "python3", "-c", getClient}, args...)...)
		} else {
			o, err := exec.Command("python3", append([]string{"-c", getClient}, args...)...).CombinedOutput()
			if err != nil {
				b.Fatalf("%v: %s", err, o)
			}
			text = string(o)
		}
		var v float64
		if _, err := fmt.Sscan(text, &v); err != nil {
			b.Fatalf("client output %q: %v", text, err)
		}
		return v
	}
	keyed := keyedPreviewPath(b, st, "/preview/repo/8123/")
	b.ResetTimer()
	direct := measure(true, "127.0.0.1", "8123", n, "", "", "/")
	preview := measure(false, "127.0.0.1", webPort, n, "8123-repo.localhost:"+webPort, cookie, "/")
	pathForm := measure(false, "127.0.0.1", webPort, n, "", "", keyed)
	b.StopTimer()
	b.ReportMetric(direct, "direct-median-µs")
	b.ReportMetric(preview, "preview-median-µs")
	b.ReportMetric(preview-direct, "preview-added-median-µs")
	b.ReportMetric(preview/direct, "preview-x-direct")
	b.ReportMetric(pathForm-direct, "path-form-added-median-µs")
}

// keyedPreviewPath signs in to paddock web as a browser does (its login link) and opens
// a path-form preview as a page: the address it is sent on to, with the preview key that
// the page's own requests carry instead of the UI's cookie.
func keyedPreviewPath(b testing.TB, st wire.WebStatus, path string) string {
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	code := st.LoginURL[strings.Index(st.LoginURL, "code=")+len("code="):]
	req, _ := http.NewRequest(http.MethodPost, st.URL+"/login", strings.NewReader("code="+code))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", st.URL)
	resp, err := noRedirect.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if len(resp.Cookies()) == 0 {
		b.Fatalf("signing in gave no cookie: %s", resp.Status)
	}
	req, _ = http.NewRequest(http.MethodGet, st.URL+path, nil)
	req.AddCookie(resp.Cookies()[0])
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	resp, err = noRedirect.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if !strings.Contains(loc, "/~pv-") {
		b.Fatalf("opening %s: %s, Location %q", path, resp.Status, loc)
	}
	return loc
}
