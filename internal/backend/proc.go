package backend

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
)

// pfExiting is the kernel's PF_EXITING task flag: set as a process begins to exit,
// before it closes its files, so well before it is a zombie.
const pfExiting = 0x4

// ProcStartTime is when process pid started, in clock ticks since boot (field 22 of
// /proc/PID/stat): with the pid, it names one process however pids are reused. A
// process that has ended or is ending (exiting, a zombie) is an error, as is one that
// does not exist: a killed process closes its sockets before it is a zombie, and a
// caller that saw them close must not count it as running.
func ProcStartTime(pid int) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStat(data)
}

func parseStat(data []byte) (uint64, error) {
	// The command name ends at the last ')'; field 3 (state) follows, field 9 holds
	// the flags and field 22 the start time.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return 0, errors.New("malformed stat")
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return 0, errors.New("process is a zombie")
	}
	flags, err := strconv.ParseUint(fields[6], 10, 64)
	if err != nil {
		return 0, errors.New("malformed stat")
	}
	if flags&pfExiting != 0 {
		return 0, errors.New("process is exiting")
	}
	return strconv.ParseUint(fields[19], 10, 64)
}
