package guest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestForegroundGuess: without the kernel's word, the terminal's foreground group is the
// session's only group with a running process, else the group other than the leader's
// with the newest process (a shell's job); stopped processes, zombies and other
// sessions' processes are not counted.
func TestForegroundGuess(t *testing.T) {
	type proc struct {
		pid, pgrp, sid int
		state          string
		start          int
	}
	for _, tt := range []struct {
		name  string
		procs []proc
		want  int
	}{
		{"a command alone", []proc{{10, 10, 10, "R", 5}, {11, 10, 10, "R", 6}, {20, 20, 20, "S", 1}}, 10},
		{"a shell's job", []proc{{10, 10, 10, "S", 5}, {12, 12, 10, "R", 9}, {13, 12, 10, "R", 9}}, 12},
		{"the newest job", []proc{{10, 10, 10, "S", 5}, {12, 12, 10, "S", 7}, {14, 14, 10, "R", 9}}, 14},
		{"a stopped job is not it", []proc{{10, 10, 10, "S", 5}, {12, 12, 10, "T", 9}}, 10},
		{"a zombie is not it", []proc{{10, 10, 10, "S", 5}, {12, 12, 10, "Z", 9}}, 10},
		{"no process left", []proc{{20, 20, 20, "S", 1}}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, p := range tt.procs {
				d := filepath.Join(dir, fmt.Sprint(p.pid))
				os.Mkdir(d, 0o755)
				// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
				// cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime
				stat := fmt.Sprintf("%d (a) b) %s 1 %d %d 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", p.pid, p.state, p.pgrp, p.sid, p.start)
				os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644)
			}
			os.Mkdir(filepath.Join(dir, "self"), 0o755)
			if got := foregroundGuess(dir, 10); got != tt.want {
				t.Errorf("foregroundGuess = %d, want %d", got, tt.want)
			}
		})
	}
}
