package guest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// A terminal's line discipline turns its interrupt, quit and suspend characters (^C, ^\,
// ^Z) into SIGINT, SIGQUIT and SIGTSTP for the terminal's foreground process group. The
// pseudo-terminals of gVisor's kernel before 2023 (Debian's runsc among them) do not:
// ^C typed into `paddock exec -t` or `paddock shell` reached the program as a plain byte
// and a flood ran on. Where the kernel does not, the guest raises the signals itself, for
// the terminals it made.

// kernelSignalsTTY reports whether this kernel's pseudo-terminals raise the signals of
// their special characters. Linux answers TIOCGPGRP on a terminal's master end, and does;
// a kernel that does not answer it is tried once: a process on a terminal of its own is
// sent ^C, and must be ended by it.
var kernelSignalsTTY = sync.OnceValue(func() bool {
	master, slave, err := pty.Open()
	if err != nil {
		return true
	}
	defer master.Close()
	defer slave.Close()
	if _, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPGRP); err == nil {
		return true
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return true
	}
	cmd := exec.Command(sleep, "5")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		return true
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	time.Sleep(50 * time.Millisecond) // sleep's exec done, with the terminal its own
	master.Write([]byte{3})
	select {
	case <-done:
		return true
	case <-time.After(500 * time.Millisecond):
		cmd.Process.Kill()
		<-done
		return false
	}
})

// ttySignaller raises, for a kernel that does not, the signals of the special characters
// written to the terminal of the session led by leader.
type ttySignaller struct {
	tty    *os.File // the master end
	leader int
}

// wrote raises the signals of the special characters in b, as the terminal's settings
// (ISIG, VINTR, VQUIT, VSUSP) have them, once b is written, where the kernel does not.
func (s ttySignaller) wrote(b []byte) {
	t, err := unix.IoctlGetTermios(int(s.tty.Fd()), unix.TCGETS)
	if err != nil || t.Lflag&unix.ISIG == 0 {
		return
	}
	for _, c := range []struct {
		cc  int
		sig syscall.Signal
	}{{unix.VINTR, syscall.SIGINT}, {unix.VQUIT, syscall.SIGQUIT}, {unix.VSUSP, syscall.SIGTSTP}} {
		ch := t.Cc[c.cc]
		if ch == 0 || !bytes.Contains(b, []byte{ch}) || kernelSignalsTTY() {
			continue
		}
		if pg := foregroundGuess("/proc", s.leader); pg > 0 {
			syscall.Kill(-pg, c.sig)
		}
	}
}

// foregroundGuess is the process group of the session led by leader that is most likely
// its terminal's foreground one, when the kernel says not (gVisor's /proc shows no tpgid,
// and TIOCGPGRP answers only within the session): the session's only group with a
// running process, else the group other than the leader's with the newest process (a shell's job,
// started after the shell). A shell's background job started after the one in the
// foreground is the guess it gets wrong.
func foregroundGuess(proc string, leader int) int {
	type group struct {
		pgid  int
		start uint64
	}
	groups := map[int]*group{}
	entries, _ := os.ReadDir(proc)
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(proc, e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		// state ppid pgrp session ... starttime (the 20th after the name)
		if len(f) < 20 || f[3] != strconv.Itoa(leader) || f[0] == "Z" || f[0] == "T" || f[0] == "t" {
			continue
		}
		pgid, _ := strconv.Atoi(f[2])
		start, _ := strconv.ParseUint(f[19], 10, 64)
		g := groups[pgid]
		if g == nil {
			g = &group{pgid: pgid}
			groups[pgid] = g
		}
		g.start = max(g.start, start)
	}
	if len(groups) == 0 {
		return 0
	}
	if len(groups) == 1 {
		for pg := range groups {
			return pg
		}
	}
	var others []*group
	for pg, g := range groups {
		if pg != leader {
			others = append(others, g)
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i].start > others[j].start })
	return others[0].pgid
}
