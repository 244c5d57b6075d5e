package microvm

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLastConsoleLinesReadsTheEnd: the VM writes its console as much as it likes (a
// guest with root can write the serial port without end); the daemon reads only its end
// for the last lines an error or a listing shows.
func TestLastConsoleLinesReadsTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.log")
	noise := strings.Repeat("spam spam spam spam spam spam spam spam spam spam spam spam\r\n", 1<<18)
	if err := os.WriteFile(path, []byte(noise+"[  1.0] Kernel panic - not syncing: boom\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := lastConsoleLine(path)
	runtime.ReadMemStats(&after)
	if got != "[  1.0] Kernel panic - not syncing: boom" {
		t.Errorf("the last line: %q", got)
	}
	if read := after.TotalAlloc - before.TotalAlloc; read > 1<<20 {
		t.Errorf("reading the last line of a %d MiB console allocated %d KiB", len(noise)>>20, read>>10)
	}
}
