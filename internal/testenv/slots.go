package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Slot holds one of n slots of kind, shared by every test process on the machine, until
// tb ends: make test runs several go test processes side by side, each with parallel
// tests, and a kind of test that keeps processors busy (an agent CLI: node starting, a
// model's turn, its tools) then runs at most n at once, instead of so many that they
// starve each other past their waits. PADDOCK_TEST_SLOTS_<KIND> (upper case) sets n.
// A lock of flock(2) on a file under the temporary directory is a slot: the kernel lets
// it go when its process ends, however it ends.
func Slot(tb testing.TB, kind string, n int) {
	tb.Helper()
	if v, err := strconv.Atoi(os.Getenv("PADDOCK_TEST_SLOTS_" + upper(kind))); err == nil && v > 0 {
		n = v
	}
	dir := filepath.Join(os.TempDir(), "paddock-test-slots")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	for said := false; ; time.Sleep(100 * time.Millisecond) {
		for i := range n {
			f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%s-%d.lock", kind, i)), os.O_CREATE|os.O_RDWR, 0o666)
			if err != nil {
				tb.Fatal(err)
			}
			if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
				if said {
					tb.Logf("waited %s for a %s slot", time.Since(start).Round(time.Second/10), kind)
				}
				tb.Cleanup(func() { f.Close() }) // closing lets the lock go
				return
			}
			f.Close()
		}
		said = true
	}
}

// upper is kind as an environment variable's name has it.
func upper(kind string) string {
	b := []byte(kind)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		case c == '-':
			b[i] = '_'
		}
	}
	return string(b)
}
