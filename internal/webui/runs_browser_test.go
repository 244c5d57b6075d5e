package webui_test

import (
	"context"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/modeltest"
)

// TestBrowserRuns: a run of paddock's own agent shows on its sandbox's page as it works,
// turns done by itself from the event stream, and opens onto its steps, the tool's output
// included.
func TestBrowserRuns(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	need(t, "bwrap", "sandboxes")
	model := modeltest.NewAnthropic(t)
	d := newDaemon(t)
	d.Setenv("ANTHROPIC_BASE_URL", model.URL())
	d.Setenv("ANTHROPIC_API_KEY", "sk-ant-browser-runs-0123456789")
	d.paddock("up", filepath.Join(d.home, "repo"))
	login := d.web()
	b := newBrowser(t, chrome)
	b.do(chromedp.Navigate(login))
	b.tap(`form[action="/login"] button`)
	b.waitFor("the list", `!!document.querySelector('[data-sandbox="repo"]')`)
	u, err := url.Parse(login)
	if err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Navigate(u.Scheme + "://" + u.Host + "/s/repo"))
	b.waitFor("the sandbox page", `!!document.querySelector('[aria-label="Sessions"]')`)
	// The run's start reaches the page on its event stream: the stream must be up first
	// (under load it came up after a 3-second run had started).
	b.waitFor("the live event stream", `!!document.querySelector('[data-feed="live"]')`)

	done := make(chan int, 1)
	go func() {
		f := d.Factory(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
		done <- cli.Run(context.Background(), f, []string{"run", "repo",
			"say hello\nCALL: run_command {\"command\":\"echo hello-from-run; sleep 3\"}\n"})
	}()
	b.waitFor("the run, working", `!!document.querySelector('[aria-label="Runs"] [data-run-status="running"]')`)
	if code := <-done; code != 0 {
		t.Fatalf("paddock run: exit %d", code)
	}
	b.waitFor("the run, done", `!!document.querySelector('[aria-label="Runs"] [data-run-status="done"]')`)
	if got := b.text(`[data-run] .name`); got != "say hello" {
		t.Errorf("the run's title: %q", got)
	}
	b.tap(`[data-run] summary`)
	b.waitFor("the tool step", `[...document.querySelectorAll('[data-run] [data-step="tool"]')].some(e => e.innerText.includes('hello-from-run'))`)
	b.fits("the runs")
	b.shot("runs")
}
