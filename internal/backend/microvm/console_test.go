package microvm

import (
	"net"
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

// TestTrimConsole: a console past its bound is cut back to its end, and what the VMM
// appends afterwards follows that end, with no hole before it.
func TestTrimConsole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.log")
	vmm, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer vmm.Close()
	vmm.WriteString(strings.Repeat("spam\n", 1<<20) + "last before\n")
	if err := trimConsole(path, 4<<20); err != nil {
		t.Fatal(err)
	}
	vmm.WriteString("first after\n")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > consoleTail+len("first after\n") || !strings.HasSuffix(string(data), "spam\nlast before\nfirst after\n") {
		t.Fatalf("after the trim the console is %d bytes, ending %q", len(data), string(data[max(len(data)-40, 0):]))
	}
	// One under the bound is left as it is.
	if err := trimConsole(path, 1<<20); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(data) {
		t.Fatal("a console under the bound was changed")
	}
}

// TestCopyConsoleStaysBounded: the daemon's copy of a VM's console keeps the file under
// its bound, however much the VM writes, and ends with the VM's last words.
func TestCopyConsoleStaysBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.log")
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	vm, daemon := net.Pipe()
	const bound = 1 << 20
	largest := make(chan int64, 1)
	go func() {
		// What the file holds as the VM writes, looked at after each write.
		var most int64
		line := []byte(strings.Repeat("spam ", 200) + "\r\n")
		for range 20 << 20 / len(line) {
			vm.Write(line)
			if fi, err := os.Stat(path); err == nil {
				most = max(most, fi.Size())
			}
		}
		vm.Write([]byte("[  9.9] reboot: Power down\r\n"))
		vm.Close()
		largest <- most
	}()
	copyConsole(file, path, daemon, bound)
	if most := <-largest; most > bound+32<<10 {
		t.Errorf("the console file reached %d bytes while 20 MiB were written, bound %d", most, bound)
	}
	if got := lastConsoleLine(path); got != "[  9.9] reboot: Power down" {
		t.Errorf("the console's last line: %q", got)
	}
}
