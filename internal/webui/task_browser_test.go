package webui_test

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/paddockhq/paddock/internal/github/githubtest"
)

// TestBrowserTask: a task of three shell attempts on bwrap (the first and third pass the
// check, the second fails it) as a phone shows it: the list, the task's attempts in rank
// order with their checks (the failing one's output), the best one's diff against the
// task's base where a tap on a line opens a comment box naming its file and line; Land,
// refused at first for the Makefile the work adds (it runs code on the host), then, on a
// second press, taking the best through the merge queue until the host's branch has its
// commit;
// Open PR on the other passing one, whose pull request (on a fake of GitHub) the page
// links; and a comment on a line of the failing one's diff, sent to its agent as a review.
func TestBrowserTask(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	need(t, "bwrap", "sandboxes")
	d := newDaemon(t)
	repo := filepath.Join(d.home, "repo")
	// The repository's origin is on a fake of GitHub, which the daemon reaches with the
	// token of its environment (as the end-to-end test of tasks sets it up).
	gh := githubtest.New(t)
	d.Setenv("GH_TOKEN", gh.Token)
	d.Setenv("SSL_CERT_FILE", gh.CAFile)
	d.Setenv("GIT_SSL_CAINFO", gh.CAFile)
	if err := os.WriteFile(filepath.Join(d.home, "config.toml"), fmt.Appendf(nil, "[auth.github]\napi_url = %q\n", gh.URL), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"push", "-q", gh.AddRepo(t, "acme", "greet"), "main"}, {"remote", "add", "origin", gh.RemoteURL("acme", "greet")}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	// The shell agent runs its prompt: attempt 2 writes bad.txt, the others ok.txt and a
	// Makefile (which runs code on the host once landed); each commits its work and ends
	// its turn. Run again (restarted), it reads what is typed (cat), as an agent at its
	// prompt does.
	prompt := `cd /workspace && case "$PADDOCK_SANDBOX" in *-2) f=bad.txt ;; *) f=ok.txt ;; esac && ` +
		`if [ -f $f ]; then exec cat; fi && ` +
		`printf 'first\nsecond\n' > $f && { [ $f = bad.txt ] || printf 'all:\n\ttrue\n' > Makefile; } && ` +
		`git add -A && git -c user.name=a -c user.email=a@example.com commit -qm "Add $f"`
	name := strings.TrimSpace(d.paddock("task", "new", repo, "--name", "greet", "--agents", "shell:3", "--backend", "bwrap",
		"--check", "test -f ok.txt || { echo no ok.txt here; exit 1; }", "--prompt", prompt))
	if name != "greet" {
		t.Fatalf("task new printed %q", name)
	}
	login := d.web()
	u, err := url.Parse(login)
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, chrome)
	b.do(chromedp.Navigate(login))
	b.tap(`form[action="/login"] button`)
	b.tap(`[data-nav="tasks"]`)
	b.waitFor("the task in the list", `!!document.querySelector('[data-task="greet"]')`)
	b.tap(`[data-task="greet"] a`)

	// Every attempt checked: the two that pass first, then #2 with its check's output.
	b.waitOr("the attempts checked", `document.querySelectorAll('[data-attempt] [data-checks]').length === 3`, 3*time.Minute, nil)
	b.waitFor("the passing attempts first", `(() => {
		const cards = [...document.querySelectorAll('[data-attempt]')];
		return cards.length === 3 && cards[0].dataset.rank === '1' && cards[1].dataset.rank === '2' &&
			cards[0].querySelector('[data-checks="passed"]') && cards[1].querySelector('[data-checks="passed"]') &&
			cards[2].dataset.attempt === '2' && cards[2].querySelector('[data-checks="failed"]') &&
			cards[2].innerText.includes('no ok.txt here') && cards[0].innerText.includes('2 files +4') &&
			!cards[2].querySelector('[data-land]');
	})()`)
	b.fits("the task's attempts")
	best := eval[string](b, `document.querySelectorAll('[data-attempt]')[0].dataset.attempt`)
	other := eval[string](b, `document.querySelectorAll('[data-attempt]')[1].dataset.attempt`)

	// The best attempt's diff: a tap on its second line opens a comment box on ok.txt:2.
	b.tap(`[data-open-diff="` + best + `"]`)
	b.waitFor("the attempt's diff", `!!document.querySelector('[data-file="ok.txt"] [data-line="2"]')`)
	b.tap(`[data-file="ok.txt"] [data-line="2"]`)
	b.waitFor("the comment box on ok.txt:2", `!!document.querySelector('[data-comment="ok.txt:2"] textarea')`)
	b.fits("the attempt's diff")
	b.shot("attempt")

	// Land the best from the task's page: refused at first, naming the Makefile, which
	// runs code on the host; on a second press, the host's main gets its commit.
	b.do(chromedp.Navigate(u.Scheme + "://" + u.Host + "/t/greet"))
	b.waitFor("the Land button", `!!document.querySelector('[data-land="`+best+`"]')`)
	eval[any](b, `window.confirm = () => true`)
	b.tap(`[data-land="` + best + `"]`)
	b.waitFor("the warning", `!!document.querySelector('[data-land-anyway="`+best+`"]') &&
		document.querySelector('.land-warning').innerText.includes('changes files that run code on the host once landed: Makefile')`)
	if head := gitHead(t, repo); head != "init" {
		t.Fatalf("the host's main moved before the second press: %q", head)
	}
	b.tap(`[data-land-anyway="` + best + `"]`)
	b.waitOr("landed", `!!document.querySelector('[data-queue-state="landed"]')`, 3*time.Minute, func() string { return b.text(`[aria-label="Landing"]`) + " " + b.text(`.error`) })
	if head := gitHead(t, repo); head != "Add ok.txt" {
		t.Fatalf("the host's main after landing: %q, want the attempt's commit", head)
	}

	// Open PR on the other passing attempt: its pull request is linked once opened.
	b.tap(`[data-pr="` + other + `"]`)
	b.waitOr("the pull request", `(document.querySelector('[data-queue-state="pr"] [data-pr-url]') || {}).innerText === '#1'`, 2*time.Minute,
		func() string { return b.text(`[aria-label="Landing"]`) + " " + b.text(`.error`) })
	if pr, ok := gh.Pull(1); !ok || pr.Base != "main" || !strings.Contains(pr.Body, "test -f ok.txt") {
		t.Fatalf("the pull request GitHub holds: %+v", pr)
	}
	if wrong := gh.Wrong(); len(wrong) > 0 {
		t.Fatalf("requests GitHub would refuse: %v", wrong)
	}
	b.fits("the landing")
	b.shot("task")

	// A review of the failing attempt, written on a line of its diff, reaches its agent
	// (its shell session, brought back to wait) and is recorded with its file and line.
	d.paddock("restart", "greet-2/shell")
	b.do(chromedp.Navigate(u.Scheme + "://" + u.Host + "/t/greet/2"))
	b.tap(`[data-file="bad.txt"] [data-line="2"]`)
	b.typeIn(`[data-comment="bad.txt:2"] textarea`, "name it ok.txt")
	b.tap(`[data-comment="bad.txt:2"] [data-send-review]`)
	b.waitOr("the review sent and recorded", `(document.querySelector('.review-sent') || {}).innerText === 'Sent to shell on bad.txt:2: its next commit is checked again.' &&
		(document.querySelector('.reviews') || {}).innerText.includes('bad.txt:2 name it ok.txt')`, time.Minute, func() string { return b.text(`main`) })
}
