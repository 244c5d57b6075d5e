// Package testenv is the one gate that decides whether a test may skip for want of a
// tool. On a developer's machine a missing tool skips the tests that need it, saying how
// to install it. Under CI, or with PADDOCK_TEST_STRICT=1, everything `make setup`
// installs must be there, and a missing tool fails the test instead: a suite that
// silently skipped its sandboxes would pass while proving nothing.
package testenv

import (
	"os"
	"os/exec"
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

// Program returns the path of prog, or skips (fails, when Strict) the test without it.
func Program(tb testing.TB, prog, fix string) string {
	tb.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		Missing(tb, prog+" is not installed", fix)
	}
	return p
}
