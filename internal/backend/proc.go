package backend

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
)

// ProcStartTime is when process pid started, in clock ticks since boot (field 22 of
// /proc/PID/stat): with the pid, it names one process however pids are reused. A
// process that has ended (a zombie) is an error, as is one that does not exist.
func ProcStartTime(pid int) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name ends at the last ')'; field 3 (state) follows, and the start
	// time is field 22.
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
	return strconv.ParseUint(fields[19], 10, 64)
}
