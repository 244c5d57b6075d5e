package backend

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestProcStartTime(t *testing.T) {
	if _, err := ProcStartTime(os.Getpid()); err != nil {
		t.Fatalf("ProcStartTime(self): %v", err)
	}

	// A child that has ended and is not reaped yet is a zombie: ended.
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := ProcStartTime(cmd.Process.Pid)
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an ended child still counts as running")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestParseStat(t *testing.T) {
	// Fields after the name: state ppid pgrp session tty tpgid flags ... starttime (22nd).
	line := func(name, state, flags string) []byte {
		rest := []string{state, "1", "1", "1", "0", "-1", flags, "0", "0", "0", "0", "0", "0", "0", "0", "20", "0", "1", "0", "5484107", "3133440", "390"}
		return []byte("4242 (" + name + ") " + strings.Join(rest, " "))
	}
	for _, tc := range []struct {
		name    string
		stat    []byte
		want    uint64
		wantErr string
	}{
		{"running", line("qemu", "S", "4194304"), 5484107, ""},
		{"a name with ) and spaces", line("a) S 1 (b", "R", "0"), 5484107, ""},
		// SIGKILLed, its sockets already closed, not yet a zombie.
		{"exiting", line("qemu", "D", "4194308"), 0, "exiting"},
		{"zombie", line("qemu", "Z", "4194304"), 0, "zombie"},
		{"dead", line("qemu", "X", "0"), 0, "zombie"},
		{"truncated", []byte("4242 (qemu) S 1 1"), 0, "malformed"},
		{"no name", []byte("4242 qemu S"), 0, "malformed"},
	} {
		got, err := parseStat(tc.stat)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want one saying %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: = %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}

// TestProcCPU: a thread that spins reads as running, with its processor time; a stat
// file that is not one is an error.
func TestProcCPU(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Spin until the kernel has counted 200 ms of this thread's processor time (on a
	// loaded machine that takes longer than 200 ms), then read it as ProcCPU does.
	threadCPU := func() time.Duration {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for deadline := time.Now().Add(time.Minute); threadCPU() < 200*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Skip("this thread got under 200 ms of processor time in a minute")
		}
	}
	state, used, err := ProcCPU("/proc/thread-self/stat")
	if err != nil || state != "R" || used < 150*time.Millisecond {
		t.Fatalf("ProcCPU(this thread) after 200 ms of processor time = %q, %v, %v: want R and at least 150 ms", state, used, err)
	}
	bad := filepath.Join(t.TempDir(), "stat")
	os.WriteFile(bad, []byte("1 (x) R 0 0\n"), 0o644)
	if _, _, err := ProcCPU(bad); err == nil {
		t.Fatal("ProcCPU of a short stat file succeeded")
	}
}
