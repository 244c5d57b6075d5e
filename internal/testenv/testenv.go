// Package testenv is the one gate that decides whether a test may skip for want of a
// tool. On a developer's machine a missing tool skips the tests that need it, saying how
// to install it. Under CI, or with PADDOCK_TEST_STRICT=1, everything `make setup`
// installs must be there, and a missing tool fails the test instead: a suite that
// silently skipped its sandboxes would pass while proving nothing. It also holds the few
// fixtures that tests of several packages share.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// StrictEnv names the variable that makes missing tools fail tests (CI sets it, and so
// does .ci/run; CI alone also counts).
const StrictEnv = "PADDOCK_TEST_STRICT"

// Strict says whether a missing tool fails a test rather than skipping it.
func Strict() bool {
	return os.Getenv(StrictEnv) == "1" || os.Getenv("CI") != ""
}

// Missing skips the test (or fails it, when Strict) because what it needs is not here;
// fix says how to get it.
func Missing(tb testing.TB, what, fix string) {
	tb.Helper()
	if Strict() {
		tb.Fatalf("%s, which make setup provides: %s (%s=1 or CI makes this a failure, not a skip)", what, fix, StrictEnv)
	}
	tb.Skipf("%s: %s", what, fix)
}

// Heavy skips the test under go test -short, as make test-quick runs the suite: the test
// needs a microVM, the Kubernetes cluster, a Vagrant machine or Chromium, which the quick
// run leaves out (strict or not); what names it. make test runs it.
func Heavy(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("needs %s: left out of quick runs (-short, make test-quick); make test runs it", what)
	}
}

// Program returns the path of prog, or skips (fails, when Strict) the test without it.
func Program(tb testing.TB, prog, fix string) string {
	tb.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		Missing(tb, prog+" is not installed", fix)
	}
	return p
}

var (
	smallGuestOnce sync.Once
	smallGuestPath string
	smallGuestErr  error
)

// SmallGuest builds the small guest (cmd/paddock-guest, as `make build` puts it beside
// paddock) once per test binary and returns its path; the caller decides what a failed
// build means for its test.
func SmallGuest() (string, error) {
	smallGuestOnce.Do(func() {
		dir, err := os.MkdirTemp("", "paddock-small-guest-")
		if err != nil {
			smallGuestErr = err
			return
		}
		smallGuestPath = filepath.Join(dir, "paddock-guest")
		build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", smallGuestPath, "github.com/paddockhq/paddock/cmd/paddock-guest")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			smallGuestErr = fmt.Errorf("build the small guest: %v: %s", err, out)
		}
	})
	return smallGuestPath, smallGuestErr
}

// History writes n commits onto the branch main of repo with git fast-import, each
// changing one of 100 files under src/, and checks main out: a project with a history,
// for the sync benchmarks.
func History(tb testing.TB, repo string, n int) {
	tb.Helper()
	var in strings.Builder
	for i := 1; i <= n; i++ {
		body := fmt.Sprintf("line %d of file %d\n", i, i%100)
		fmt.Fprintf(&in, "commit refs/heads/main\ncommitter B <b@example.com> %d +0000\ndata 8\ncommit %d\n", 1700000000+i, i%10)
		if i > 1 {
			fmt.Fprintf(&in, "from refs/heads/main^0\n")
		}
		fmt.Fprintf(&in, "M 644 inline src/file%03d.txt\ndata %d\n%s\n", i%100, len(body), body)
	}
	cmd := exec.Command("git", "-C", repo, "fast-import", "--quiet")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("fast-import: %v %s", err, out)
	}
	if out, err := exec.Command("git", "-C", repo, "reset", "-q", "--hard", "main").CombinedOutput(); err != nil {
		tb.Fatalf("reset: %v %s", err, out)
	}
}

// Touch20 is a script that commits a change to 20 of History's files, its argument in
// each change: the sync benchmarks' new commit.
const Touch20 = `set -e; for f in $(seq 0 19); do echo "change $1" >> src/file0$(printf %02d $f).txt; done; git add -A; git -c user.name=b -c user.email=b@example.com commit -q -m "change $1"`

// ShortTempDir is a temporary directory, removed when the test ends, with a path short
// enough for unix sockets (t.TempDir's may not be) and mode 0711, so that a sandbox's
// own user may reach what is below it.
func ShortTempDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "pdk")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		tb.Fatal(err)
	}
	return dir
}
