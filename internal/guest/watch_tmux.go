package guest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// tmuxReaper works around a tmux server that misses a SIGCHLD (seen with tmux 3.3a when
// several panes end at once on a loaded machine): the pane's process stays a zombie, tmux
// never learns its exit status, and the pane-died hook that reports the session's exit
// never runs, until some other child of the server ends. A zombie child of a tmux server
// seen in two looks in a row gets the server a SIGCHLD, on which tmux reaps every child
// that ended. The look reads /proc/PID/stat of each process in the sandbox.
type tmuxReaper struct {
	zombies map[int]bool // zombie children of tmux servers seen in the last look
	buf     []byte       // read buffer kept between looks
}

func (r *tmuxReaper) scan(proc string) {
	dir, err := os.Open(proc)
	if err != nil {
		return
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return
	}
	var now map[int]bool
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		state, ppid, ok := procState(&r.buf, proc+"/"+name+"/stat")
		if !ok || state != 'Z' || ppid <= 1 {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(ppid), "comm"))
		if err != nil || !strings.HasPrefix(string(comm), "tmux") {
			continue
		}
		if now == nil {
			now = map[int]bool{}
		}
		now[pid] = true
		if r.zombies[pid] {
			syscall.Kill(ppid, syscall.SIGCHLD)
		}
	}
	r.zombies = now
}

// procState reads a process's state letter and parent pid from /proc/PID/stat, through
// buf.
func procState(buf *[]byte, path string) (state byte, ppid int, ok bool) {
	data, err := readInto(buf, path)
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	st, pp := fieldAt(data[i+1:], 0), fieldAt(data[i+1:], 1)
	if len(st) != 1 || pp == nil {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(string(pp))
	return st[0], ppid, err == nil
}
