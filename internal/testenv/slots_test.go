package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSlot: with one slot, two parallel tests that take it run one after the other.
func TestSlot(t *testing.T) {
	kind := fmt.Sprintf("slot-test-%d", os.Getpid())
	t.Cleanup(func() { os.Remove(filepath.Join(os.TempDir(), "paddock-test-slots", kind+"-0.lock")) })
	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	t.Run("group", func(t *testing.T) {
		for _, name := range []string{"a", "b"} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				Slot(t, kind, 1)
				note("in")
				time.Sleep(300 * time.Millisecond)
				note("out")
			})
		}
	})
	if got := strings.Join(order, " "); got != "in out in out" {
		t.Errorf("order %q, want one test in the slot at a time", got)
	}
}
