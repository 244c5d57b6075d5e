package webui_test

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserTask: a task of two shell attempts on bwrap (the first passes the check, the
// second fails it) as a phone shows it: the list, the task's attempts in rank order with
// their checks (the failing one's output), the best one's diff against the task's base
// where a tap on a line opens a comment box naming its file and line, Land, which takes
// the best through the merge queue until the host's branch has its commit, and a comment
// on a line of the other's diff sent to its agent as a review.
func TestBrowserTask(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	need(t, "bwrap", "sandboxes")
	d := newDaemon(t)
	repo := filepath.Join(d.home, "repo")
	// The shell agent runs its prompt: attempt 1 writes ok.txt, attempt 2 bad.txt; each
	// commits its work and ends its turn. Run again (restarted), it reads what is typed
	// (cat), as an agent at its prompt does.
	prompt := `cd /workspace && case "$PADDOCK_SANDBOX" in *-1) f=ok.txt ;; *) f=bad.txt ;; esac && ` +
		`if [ -f $f ]; then exec cat; fi && ` +
		`printf 'first\nsecond\n' > $f && git add $f && git -c user.name=a -c user.email=a@example.com commit -qm "Add $f"`
	name := strings.TrimSpace(d.paddock("task", "new", repo, "--name", "greet", "--agents", "shell:2", "--backend", "bwrap",
		"--check", "test -f ok.txt || { echo no ok.txt here; exit 1; }", "--prompt", prompt))
	if name != "greet" {
		t.Fatalf("task new printed %q", name)
	}
	login := d.web()
	b := newBrowser(t, chrome)
	b.do(chromedp.Navigate(login))
	b.tap(`form[action="/login"] button`)
	b.tap(`[data-nav="tasks"]`)
	b.waitFor("the task in the list", `!!document.querySelector('[data-task="greet"]')`)
	b.tap(`[data-task="greet"] a`)

	// Both attempts checked: #1 passes first, #2 fails with its check's output shown.
	b.waitOr("both attempts checked", `document.querySelectorAll('[data-attempt] [data-checks]').length === 2`, 3*time.Minute, nil)
	b.waitFor("the passing attempt first", `(() => {
		const cards = [...document.querySelectorAll('[data-attempt]')];
		return cards.length === 2 && cards[0].dataset.attempt === '1' && cards[0].dataset.rank === '1' &&
			cards[0].querySelector('[data-checks="passed"]') && cards[1].querySelector('[data-checks="failed"]') &&
			cards[1].innerText.includes('no ok.txt here') && cards[0].innerText.includes('1 file +2');
	})()`)
	b.fits("the task's attempts")

	// The best attempt's diff: a tap on its second line opens a comment box on ok.txt:2.
	b.tap(`[data-open-diff="1"]`)
	b.waitFor("the attempt's diff", `!!document.querySelector('[data-file="ok.txt"] [data-line="2"]')`)
	b.tap(`[data-file="ok.txt"] [data-line="2"]`)
	b.waitFor("the comment box on ok.txt:2", `!!document.querySelector('[data-comment="ok.txt:2"] textarea')`)
	b.fits("the attempt's diff")
	b.shot("attempt")

	// Land from the task's page: the host's main gets the attempt's commit.
	u, err := url.Parse(login)
	if err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Navigate(u.Scheme + "://" + u.Host + "/t/greet"))
	b.waitFor("the Land button", `!!document.querySelector('[data-land="1"]') && !document.querySelector('[data-land="2"]')`)
	eval[any](b, `window.confirm = () => true`)
	b.tap(`[data-land="1"]`)
	b.waitOr("landed", `!!document.querySelector('[data-queue-state="landed"]')`, 3*time.Minute, func() string { return b.text(`[aria-label="Landing"]`) + " " + b.text(`.error`) })
	if head := gitHead(t, repo); head != "Add ok.txt" {
		t.Fatalf("the host's main after landing: %q, want the attempt's commit", head)
	}
	b.fits("the landing")
	b.shot("task")

	// A review of the second attempt, written on a line of its diff, reaches its agent (its
	// shell session, brought back to wait) and is recorded with its file and line.
	d.paddock("restart", "greet-2/shell")
	b.do(chromedp.Navigate(u.Scheme + "://" + u.Host + "/t/greet/2"))
	b.tap(`[data-file="bad.txt"] [data-line="2"]`)
	b.typeIn(`[data-comment="bad.txt:2"] textarea`, "name it ok.txt")
	b.tap(`[data-comment="bad.txt:2"] [data-send-review]`)
	b.waitOr("the review sent and recorded", `(document.querySelector('.review-sent') || {}).innerText === 'Sent to shell on bad.txt:2: its next commit is checked again.' &&
		(document.querySelector('.reviews') || {}).innerText.includes('bad.txt:2 name it ok.txt')`, time.Minute, func() string { return b.text(`main`) })
}
