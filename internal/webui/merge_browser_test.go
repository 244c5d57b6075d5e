package webui_test

import (
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserSyncAndMerge: the changes page's Sync and Merge, run by the daemon in the
// sandbox's host repository: Merge shows the plan with the files that run code on the host
// named, and merges into the host's branch only on the second press.
func TestBrowserSyncAndMerge(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	need(t, "bwrap", "sandboxes")
	d := newDaemon(t)
	repo := filepath.Join(d.home, "repo")
	d.paddock("up", repo)
	if code := d.inside("sh", "-c", `cd /workspace && printf 'all:\n\ttrue\n' > Makefile && git add Makefile && git -c user.name=a -c user.email=a@example.com commit -qm 'Add a Makefile'`); code != 0 {
		t.Fatalf("commit inside: exit %d", code)
	}
	login := d.web()
	b := newBrowser(t, chrome)
	b.do(chromedp.Navigate(login))
	b.tap(`form[action="/login"] button`)
	b.waitFor("the list", `!!document.querySelector('[data-sandbox="repo"]')`)
	u, err := url.Parse(login)
	if err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Navigate(u.Scheme + "://" + u.Host + "/s/repo/-/changes"))
	b.waitFor("the commit", `document.body.innerText.includes('Add a Makefile') && !document.querySelector('[data-git="sync"]').disabled`)

	b.tap(`[data-git="sync"]`)
	b.waitFor("the sync's news", `document.querySelector('.git-note') && document.querySelector('.git-note').textContent.includes('2 refs updated')`)
	b.tap(`[data-git="check"]`)
	b.waitFor("the plan, the Makefile warned of", `!!document.querySelector('.merge-plan') && document.querySelector('.merge-plan').innerText.includes('a fast-forward, 1 commit, 1 file') && document.querySelector('.merge-warning').innerText.includes('Makefile (make runs its recipes)')`)
	if head := gitHead(t, repo); head != "init" {
		t.Fatalf("the host's branch moved before the second press: %q", head)
	}
	b.fits("the merge plan")
	b.tap(`[data-git="merge"]`)
	b.waitFor("the merge said", `document.querySelector('.git-note') && document.querySelector('.git-note').textContent.includes('Merged main into main (fast-forward, 1 commit, 1 file). To undo, on the host: git reset --hard')`)
	if head := gitHead(t, repo); head != "Add a Makefile" {
		t.Fatalf("the host's branch after Merge: %q, want the agent's commit", head)
	}
}

// gitHead is the subject of the host repository's HEAD commit.
func gitHead(t *testing.T, repo string) string {
	out, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%s").CombinedOutput()
	if err != nil {
		t.Fatalf("git log: %v %s", err, out)
	}
	return strings.TrimSpace(string(out))
}
