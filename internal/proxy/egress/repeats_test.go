package egress_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/proxy/egress"
)

// TestRepeatedRefusalsAreFolded checks that a sandbox asking again and again for what it
// is refused gets its answer every time, while the log and the denial records see one
// refusal per sandbox, host and port in each window; distinct destinations are each seen.
func TestRepeatedRefusalsAreFolded(t *testing.T) {
	fn := newFakeNet(t)
	logs := &syncBuffer{}
	d := &denials{}
	const window = 300 * time.Millisecond
	var elapsed atomic.Int64 // the proxy's clock: it moves only when the test says
	base := time.Unix(1_700_000_000, 0)
	p := egress.New(egress.Options{
		Policy:       (&policyStore{}).Policy, // nothing allowed
		OnDenial:     d.add,
		LookupIP:     fn.LookupIP,
		Dial:         fn.Dial,
		Logger:       slog.New(slog.NewTextHandler(logs, nil)),
		RepeatWindow: window,
		Now:          func() time.Time { return base.Add(time.Duration(elapsed.Load())) },
	})
	h, other := p.Handler(sandbox), p.Handler("other")
	connect := func(h http.Handler, target string) int {
		r := &http.Request{Method: http.MethodConnect, Host: target, URL: &url.URL{Host: target}, RequestURI: target, Header: http.Header{}}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}

	targets := []string{"a.test:443", "b.test:443", "b.test:8443"}
	for i := 0; i < 3000; i++ {
		if code := connect(h, targets[i%len(targets)]); code != 403 {
			t.Fatalf("request %d: status %d, want 403", i, code)
		}
	}
	if code := connect(other, "a.test:443"); code != 403 {
		t.Fatalf("status %d, want 403", code)
	}
	for i := 0; i < 100; i++ {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/origin-form", nil))
		if w.Code != 400 {
			t.Fatalf("status %d, want 400", w.Code)
		}
	}

	all := d.all()
	if len(all) != 3001 {
		t.Fatalf("OnDenial called %d times, want 3001 (every refusal is reported)", len(all))
	}
	var firsts []string
	for _, x := range all {
		if !x.Repeat {
			firsts = append(firsts, x.Sandbox+" "+x.Host+":"+strconv.Itoa(x.Port))
		}
	}
	want := []string{"myrepo a.test:443", "myrepo b.test:443", "myrepo b.test:8443", "other a.test:443"}
	if strings.Join(firsts, ",") != strings.Join(want, ",") {
		t.Errorf("new (not repeated) denials %q, want %q", firsts, want)
	}
	if n := strings.Count(logs.String(), "status=403"); n != 4 {
		t.Errorf("%d log lines for refusals, want 4 (one per sandbox, host and port):\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "status=400"); n != 1 {
		t.Errorf("%d log lines for 100 identical bad requests, want 1", n)
	}

	// Once the window has passed, the same refusal is new again: logged and recorded anew.
	elapsed.Add(int64(window + 50*time.Millisecond))
	connect(h, "a.test:443")
	if last := d.all()[len(d.all())-1]; last.Repeat {
		t.Errorf("a refusal after the window is reported as a repeat: %+v", last)
	}
	if n := strings.Count(logs.String(), "status=403"); n != 5 {
		t.Errorf("%d log lines for refusals after the window, want 5", n)
	}
}
