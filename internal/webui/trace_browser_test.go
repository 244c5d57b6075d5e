package webui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/inside"
)

// traceScript runs before each page's own scripts: it records, with the time, what
// the page learns (each event of the stream, the stream opening and failing, each
// transcript read and what it held), in window.__trace, for a failing test to show.
// window.__drop is a function: the events it returns true for are recorded as dropped
// and never reach the page, as if the stream had lost them.
const traceScript = `(() => {
	const log = [];
	window.__trace = log;
	const note = (what) => {
		log.push(new Date().toISOString().slice(11, 23) + ' ' + what);
		if (log.length > 500) log.shift();
	};
	const ES = window.EventSource;
	window.EventSource = class extends ES {
		constructor(url, init) {
			super(url, init);
			note('stream: connecting to ' + url);
			this.addEventListener('open', () => note('stream: open'));
			this.addEventListener('error', () => note('stream: error, readyState ' + this.readyState));
			this.addEventListener('message', (m) => {
				let ev = {};
				try { ev = JSON.parse(m.data); } catch {}
				const drop = typeof window.__drop === 'function' && window.__drop(ev);
				note((drop ? 'DROPPED ' : '') + 'event ' + ev.seq + ' ' + ev.kind + ' ' + (ev.session || '') + ' ' + JSON.stringify(ev.attrs || {}));
				if (drop) m.stopImmediatePropagation();
			});
		}
	};
	// Events of the session named in sessionStorage "drop-session" are dropped, from a
	// page's first event on.
	window.__drop = window.__drop || ((ev) => !!ev.session && ev.session === sessionStorage.getItem('drop-session'));
	const fetch0 = window.fetch;
	window.fetch = async (...args) => {
		const url = String(args[0] && args[0].url ? args[0].url : args[0]);
		if (!url.endsWith('/transcript')) return fetch0(...args);
		note('read ' + url);
		const res = await fetch0(...args);
		res.clone().json().then((es) => {
			const last = Array.isArray(es) && es.length ? es[es.length - 1] : null;
			note('read answered ' + res.status + ': ' + (Array.isArray(es) ? es.length + ' entries, the last ' + (last ? last.kind + ' ' + JSON.stringify((last.text || last.output || last.tool || '').slice(0, 60)) : 'none') : JSON.stringify(es).slice(0, 200)));
		}, () => note('read answered ' + res.status + ' (not JSON)'));
		return res;
	};
})();`

// trace makes every page the browser loads from now on record what it learns (traceScript).
func (b *browser) trace() {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: traceScript}); err != nil {
		b.t.Fatal(err)
	}
}

// pageTrace is what the page recorded (traceScript).
func (b *browser) pageTrace() string {
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(window.__trace || ['(no trace)']).join('\n')`))
	if err != nil {
		return err.Error()
	}
	return v
}

// conversationState says, for a conversation the page did not show in time, whether
// the agent had not written answer yet or had and the page was not told; with what the
// daemon reads of the session's transcript now, the file itself inside the sandbox with
// its time, the session's status, and what the page learnt and when.
func (d *daemon) conversationState(b *browser, sb, name, answer string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out strings.Builder
	fmt.Fprintf(&out, "now: %s\n", time.Now().UTC().Format("15:04:05.000"))
	entries, err := d.client.Transcript(ctx, sb, name)
	answered := false
	for _, e := range entries {
		answered = answered || (e.Kind == "assistant" && strings.Contains(e.Text, answer))
	}
	if answered {
		fmt.Fprintf(&out, "THE PAGE IS BEHIND: the daemon reads %q in the transcript now, and the page does not show it\n", answer)
	} else {
		fmt.Fprintf(&out, "THE AGENT IS LATE: the transcript holds no %q yet\n", answer)
	}
	if list, err := d.client.Sessions(ctx, sb); err != nil {
		fmt.Fprintf(&out, "sessions: %v\n", err)
	} else {
		for _, s := range list {
			fmt.Fprintf(&out, "session %s: %s %s\n", s.Name, s.Status, s.Detail)
		}
	}
	fmt.Fprintf(&out, "the transcript as the daemon reads it (err %v):\n", err)
	for _, e := range entries {
		line, _ := json.Marshal(e)
		fmt.Fprintf(&out, "  %s\n", line)
	}
	var file strings.Builder
	_, err = d.client.Exec(ctx, sb, wire.ExecRequest{Argv: []string{"sh", "-c",
		`for f in ` + inside.Home + `/.claude/projects/*/*.jsonl; do stat -c '%n %s bytes, modified %y' "$f"; cut -c1-400 "$f"; done`}},
		wire.ExecIO{Stdout: &file, Stderr: &file})
	fmt.Fprintf(&out, "the transcript file (err %v):\n%s\n", err, file.String())
	fmt.Fprintf(&out, "what the page learnt (UTC):\n%s\n", b.pageTrace())
	fmt.Fprintf(&out, "page text:\n%s\n", b.text("body"))
	return out.String()
}

// appendAnswer writes an answer at the end of a Claude Code session's transcript inside
// the sandbox, as Claude Code writes its turn's last lines: with no event of its own.
func (d *daemon) appendAnswer(sb, name, text string) {
	d.t.Helper()
	list, err := d.client.Sessions(context.Background(), sb)
	if err != nil {
		d.t.Fatal(err)
	}
	id := ""
	for _, s := range list {
		if s.Name == name {
			id = s.ResumeID
		}
	}
	if id == "" {
		d.t.Fatalf("session %s has no conversation id: %+v", name, list)
	}
	line, _ := json.Marshal(map[string]any{"type": "assistant", "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"id": "msg_" + strings.ReplaceAll(text, " ", "_"), "role": "assistant",
			"content": []any{map[string]any{"type": "text", "text": text}}}})
	code, err := d.client.Exec(context.Background(), sb, wire.ExecRequest{Argv: []string{"sh", "-c",
		`f=$(ls ` + inside.Home + `/.claude/projects/*/"$2".jsonl) && printf '%s\n' "$1" >> "$f"`, "sh", string(line), id}},
		wire.ExecIO{Stdout: io.Discard, Stderr: io.Discard})
	if err != nil || code != 0 {
		d.t.Fatalf("append to the transcript: exit %d, %v", code, err)
	}
}

// smallTargets fails the test for the buttons and links shown as buttons (the bar's
// back link among them) smaller than 44x44 CSS pixels, too small for a thumb.
func (b *browser) smallTargets(screen string) {
	b.t.Helper()
	small := eval[string](b, `[...document.querySelectorAll('button, a.button, .bar .back')].map(e => {
		const r = e.getBoundingClientRect();
		return r.width > 0 && (r.width < 44 || r.height < 44) ? (e.innerText.trim() || e.getAttribute('aria-label') || e.className) + ' ' + Math.round(r.width) + 'x' + Math.round(r.height) : '';
	}).filter(Boolean).join(', ')`)
	if small != "" {
		b.t.Errorf("%s: tap targets under 44x44 px: %s", screen, small)
	}
}

// getJSON GETs url with no cookie and decodes its JSON, failing the test unless it
// answers 200.
func getJSON[T any](t *testing.T, url string) T {
	t.Helper()
	var v T
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, body)
	}
	return v
}

// publicFiles checks that the web UI's manifest, which "Add to Home Screen" reads, and
// its icon are served without a cookie.
func publicFiles(t *testing.T, base string) {
	t.Helper()
	manifest := getJSON[struct {
		Name  string `json:"name"`
		Icons []struct {
			Src string `json:"src"`
		} `json:"icons"`
	}](t, base+"/manifest.webmanifest")
	if manifest.Name != "paddock" || len(manifest.Icons) == 0 {
		t.Fatalf("the manifest without a cookie: %+v", manifest)
	}
	resp, err := http.Get(base + manifest.Icons[0].Src)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("the manifest's icon without a cookie: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
}

// catchUp checks that a conversation's page shows what the agent writes to its
// transcript after its hooks reported the turn over, and what comes while the page's
// events are lost, once the page is shown again.
func (d *daemon) catchUp(b *browser, sb, name string) {
	b.t.Helper()
	// An agent's hooks may report its turn over before it has written the turn's last
	// lines (Claude Code's Stop hook runs before its transcript is flushed): the page
	// reads the transcript again over the seconds after, and shows what came late.
	notify := func(status string) {
		b.t.Helper()
		if code := d.inside("/opt/paddock/bin/paddock", "guest", "notify", "--session", name, "--status", status); code != 0 {
			b.t.Fatalf("guest notify: exit %d", code)
		}
	}
	said := func(text string) string {
		return `[...document.querySelectorAll('.msg.assistant')].some(e => e.textContent.includes('` + text + `'))`
	}
	state := func(text string) func() string {
		return func() string { return d.conversationState(b, sb, name, text) }
	}
	notify("working")
	b.waitFor("the working status", `!!document.querySelector('.bar [data-status="working"]')`)
	notify("idle")
	b.waitFor("the idle status", `!!document.querySelector('.bar [data-status="idle"]')`)
	time.Sleep(1500 * time.Millisecond)
	d.appendAnswer(sb, name, "LATE: written after the hook")
	// Within 15 s: Claude Code's own Notification hook reports the session waiting a
	// minute after its turn, which would show it anyway, a minute late.
	b.waitOr("the answer written after the hook", said("LATE: written after the hook"), 15*time.Second, state("LATE: written after the hook"))

	// The session's events lost (a phone whose stream died unseen): the page, shown
	// again, reads the transcript again.
	eval[any](b, `sessionStorage.setItem('drop-session', '`+name+`')`)
	b.do(chromedp.Reload())
	b.waitFor("the conversation again", said("LATE: written after the hook"))
	notify("working")
	d.appendAnswer(sb, name, "LATE: its events lost")
	notify("idle")
	eval[any](b, `document.dispatchEvent(new Event('visibilitychange'))`)
	b.waitOr("the answer whose events were lost, once the page is shown again", said("LATE: its events lost"), 15*time.Second, state("LATE: its events lost"))
	eval[any](b, `sessionStorage.removeItem('drop-session')`)
}
