package backend

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
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
	fields, err := statFields(data)
	if err != nil {
		return 0, err
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

// statFields are a stat file's fields after the command name, which ends at the last
// ')': field 3 (state) first, then field 9 the flags, 14 and 15 the user and system
// time, 22 the start time.
func statFields(data []byte) ([]string, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, errors.New("malformed stat")
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return nil, errors.New("malformed stat")
	}
	return fields, nil
}

// ProcCPU is the state (R, S...) of a process or thread and the processor time it has
// used, from its stat file (/proc/PID/stat or /proc/PID/task/TID/stat; the times are in
// USER_HZ ticks, 100 a second).
func ProcCPU(statPath string) (state string, used time.Duration, err error) {
	data, err := os.ReadFile(statPath)
	if err != nil {
		return "", 0, err
	}
	fields, err := statFields(data)
	if err != nil {
		return "", 0, err
	}
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, errors.New("malformed stat")
	}
	return fields[0], time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
