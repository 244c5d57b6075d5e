package guest

import (
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
}

func (r *tmuxReaper) scan(proc string) {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return
	}
	now := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, ppid, ok := procState(filepath.Join(proc, e.Name(), "stat"))
		if !ok || state != 'Z' || ppid <= 1 {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(ppid), "comm"))
		if err != nil || !strings.HasPrefix(string(comm), "tmux") {
			continue
		}
		now[pid] = true
		if r.zombies[pid] {
			syscall.Kill(ppid, syscall.SIGCHLD)
		}
	}
	r.zombies = now
}

// procState reads a process's state letter and parent pid from /proc/PID/stat.
func procState(path string) (state byte, ppid int, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0][0], ppid, err == nil
}
