package webui_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserPreview opens, from the sandbox's page, the preview of a web server started
// inside it: the page lists the port live, Open signs the browser in to the preview with
// a one-time link, and the server's page shows from http://PORT-SANDBOX.localhost.
func TestBrowserPreview(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	need(t, "bwrap", "sandboxes")
	need(t, "python3", "the web server inside the sandbox")
	d := newDaemon(t)
	d.paddock("up", filepath.Join(d.home, "repo"))
	login := d.web()

	b := newBrowser(t, chrome)
	b.do(chromedp.Navigate(login))
	b.tap(`form[action="/login"] button`)
	b.waitFor("the sandbox in the list", `!!document.querySelector('[data-sandbox="repo"] h2 a')`)
	b.tap(`[data-sandbox="repo"] h2 a`)
	b.waitFor("the ports card", `!!document.querySelector('#ports')`)

	// A server started now shows up without a reload (the port-open event).
	// Its page has a stylesheet, a script and data the script fetches: a preview shows an
	// app, not only its HTML.
	d.paddock("exec", "repo", "--", "sh", "-c", `mkdir -p /tmp/site/static && cd /tmp/site &&
		echo '<title>inside</title><link rel=stylesheet href=static/app.css><h1>served from the sandbox</h1><script src=static/app.js></script>' > index.html &&
		echo 'h1 { color: rgb(1, 2, 3) }' > static/app.css &&
		echo 'fetch("static/data.txt").then(r => r.ok ? r.text() : "HTTP " + r.status).then(t => document.body.dataset.fetched = t.trim(), e => document.body.dataset.fetched = String(e))' > static/app.js &&
		echo 'from the app' > static/data.txt`)
	d.paddock("chat", "repo", "--new", "web", "--agent", "shell", "--command", "exec python3 -m http.server 8123 --bind 127.0.0.1 --directory /tmp/site")
	b.waitFor("the port listed", `!!document.querySelector('#ports [data-port="8123"]')`)
	if row := b.text(`#ports [data-port="8123"]`); !strings.Contains(row, "python3") {
		t.Errorf("port row %q does not name the process", row)
	}
	b.fits("the sandbox with its ports")

	// The path form serves the sandbox's files under the UI's own origin (checked at the
	// end); a tag that names one (as an HTML injection into the UI would) must not load
	// it into the UI's page: a script is refused by the page's policy, and any other file
	// by the daemon.
	ui := eval[string](b, `location.origin`)
	d.paddock("exec", "repo", "--", "sh", "-c", "echo \"window.pwned = 'by the sandbox'\" > /tmp/site/evil.js && echo ':root { --sandbox: pwned }' > /tmp/site/evil.css")
	blocked := awaitEval[string](b, `new Promise(done => {
		document.addEventListener('securitypolicyviolation', e => done('blocked: ' + e.blockedURI), {once: true});
		const s = document.createElement('script');
		s.src = '/preview/repo/8123/evil.js';
		s.onload = () => done('ran: ' + window.pwned);
		document.head.appendChild(s);
	})`)
	if !strings.HasPrefix(blocked, "blocked: ") || !strings.Contains(blocked, "/preview/repo/8123/evil.js") {
		t.Fatalf("a sandbox's script named by a tag in the UI's page: %s", blocked)
	}
	styled := awaitEval[string](b, `new Promise(done => {
		const l = document.createElement('link');
		l.rel = 'stylesheet';
		l.href = '/preview/repo/8123/evil.css';
		l.onload = () => done('loaded');
		l.onerror = () => done('refused');
		document.head.appendChild(l);
	})`)
	if styled != "refused" {
		t.Fatalf("a sandbox's stylesheet named by a tag in the UI's page: %s", styled)
	}

	// Open: in this tab (as a browser that blocks the new window would).
	eval[any](b, `window.open = () => null`)
	b.tap(`#ports [data-port="8123"] button`)
	b.waitFor("the sandbox's page", `location.hostname === '8123-repo.localhost' && document.title === 'inside'`)
	if got := b.text("h1"); got != "served from the sandbox" {
		t.Fatalf("the preview shows %q", got)
	}
	b.appRuns("the host form")
	if strings.Contains(eval[string](b, `location.href`), "paddock_code") {
		t.Error("the one-time code stayed in the address bar")
	}
	// The sign-in holds for the next page of the preview.
	b.do(chromedp.Reload())
	b.waitFor("the page after a reload", `document.title === 'inside'`)

	// The path form, opened as a page, runs sandboxed, and its page's own files load: the
	// address it lands on carries the key that stands in for the UI's cookie.
	b.do(chromedp.Navigate(ui + "/preview/repo/8123/"))
	b.waitFor("the path-form preview", `document.title === 'inside'`)
	if origin := eval[string](b, `String(self.origin)`); origin != "null" {
		t.Errorf("the path-form preview runs in origin %q, not an opaque one", origin)
	}
	keyed := eval[string](b, `location.pathname`)
	if !strings.HasPrefix(keyed, "/preview/repo/8123/~pv-") {
		t.Errorf("the path-form preview landed on %q, without a key", keyed)
	}
	b.appRuns("the path form")
	b.do(chromedp.Reload())
	b.waitFor("the path-form preview after a reload", `document.title === 'inside'`)
	b.appRuns("the path form, reloaded")
	if again := eval[string](b, `location.pathname`); again != keyed {
		t.Errorf("a reload moved the preview from %s to %s", keyed, again)
	}
	// And the files refused above are the sandbox's, served under the UI's origin.
	b.do(chromedp.Navigate(ui + "/preview/repo/8123/evil.js"))
	if got := b.text("body"); !strings.Contains(got, "pwned") {
		t.Errorf("the sandbox's script is not served under the UI's origin (%q): the checks above proved nothing", got)
	}
}

// appRuns checks that the preview test's app came with its files: its stylesheet
// applied, its script ran and fetched its data.
func (b *browser) appRuns(where string) {
	b.t.Helper()
	b.waitFor(where+": the app's script fetched its data", `!!document.body.dataset.fetched`)
	if got := eval[string](b, `document.body.dataset.fetched`); got != "from the app" {
		b.t.Errorf("%s: the app's fetch got %q", where, got)
	}
	if got := eval[string](b, `getComputedStyle(document.querySelector('h1')).color`); got != "rgb(1, 2, 3)" {
		b.t.Errorf("%s: the app's stylesheet did not apply (h1 color %s)", where, got)
	}
}
