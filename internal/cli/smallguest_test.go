package cli_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/testenv"
)

// TestSmallGuest: a daemon injecting the small guest (cmd/paddock-guest, as `make build`
// puts it beside paddock) runs sandboxes as the whole binary does: exec, a session whose
// status comes from `paddock agent notify` inside, sync, and the guest is the small file.
func TestSmallGuest(t *testing.T) {
	t.Parallel()
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	h, repo := e2eHome(t)
	guest, err := testenv.SmallGuest()
	if err != nil {
		testenv.Missing(t, "the go toolchain to build the guest: "+err.Error(), "install Go")
	}
	h.Setenv("PADDOCK_GUEST_BINARY", guest)
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "up", repo)
	fi, _ := os.Stat(guest)
	if got := must("", "exec", "repo", "--", "stat", "-c", "%s", "/opt/paddock/bin/paddock"); strings.TrimSpace(got) != strconv.FormatInt(fi.Size(), 10) {
		t.Fatalf("the guest in the sandbox is %s bytes, the small one %d", got, fi.Size())
	}
	must("", "chat", "repo", "--new", "w", "--agent", "shell", "--command", "bash")
	must("", "exec", "repo", "--", "sh", "-c", "PADDOCK_SESSION=w /opt/paddock/bin/paddock agent notify --status waiting")
	waitUntil(t, 20*time.Second, "the status reported by the small guest", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "waiting")
	})
	must("", "exec", "repo", "--", "sh", "-c", "echo hi > x && git add x && git -c user.name=a -c user.email=a@b commit -qm x")
	must("", "sync", "repo")
	if out, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%s", "refs/paddock/repo/main").Output(); err != nil || string(out) != "x\n" {
		t.Fatalf("sync through the small guest: %q %v", out, err)
	}
}
