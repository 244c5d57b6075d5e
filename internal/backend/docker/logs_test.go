package docker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/guestclient"
)

// logFlood is what a process inside writes to the container's stdout: 16 MB, well past
// the log's bound, then a last line to wait for.
const (
	logFlood    = 16_000_000
	logEnd      = "paddock-log-end"
	logMaxBytes = 3 << 20 // two files of 1 MiB, and a line's slack
)

// CheckLogBounded checks a process of the sandbox cannot write to the stdout of its
// process 1 (where the engine takes the container's log from), and checks the engine's
// log on the host ends with the last line written and stays within its bound. Exported
// for the runsc tests.
func CheckLogBounded(t *testing.T, d *Docker, c *guestclient.Client, id backend.ID) {
	t.Helper()
	ctx := context.Background()
	var out strings.Builder
	// Process 1 (the guest's ns-init) and its child the guest are not dumpable: no process
	// of the sandbox can open their stdout through /proc, so none can flood the log.
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c",
		"yes 0123456789abcdef0123456789abcdef0123456789abcdef | head -c " + strconv.Itoa(logFlood) + " >/proc/1/fd/1 && echo " + logEnd + " >/proc/1/fd/1"},
		Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	wrote := code == 0 // under gVisor, whose /proc opens it whatever the dumpable flag
	ci, err := d.cli.ContainerInspect(ctx, containerName(id))
	if err != nil {
		t.Fatal(err)
	}
	if ci.LogPath == "" {
		t.Fatalf("the engine keeps no log file for the container (driver %s)", ci.HostConfig.LogConfig.Type)
	}
	if lc := ci.HostConfig.LogConfig; lc.Config["max-size"] == "" {
		t.Fatalf("the container's log (driver %s) has no max-size: %v", lc.Type, lc.Config)
	}
	// The engine copies the stream on its own time: wait for the last line.
	for deadline := time.Now().Add(30 * time.Second); wrote; {
		data, err := os.ReadFile(ci.LogPath)
		if err == nil && strings.Contains(string(data), logEnd) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container's log %s never showed its last line (%v)", ci.LogPath, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	files, err := filepath.Glob(ci.LogPath + "*")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			total += st.Size()
		}
	}
	if total > logMaxBytes {
		t.Fatalf("after %d bytes written to the container's stdout, its log on the host holds %d bytes in %d files (bound %d)", logFlood, total, len(files), logMaxBytes)
	}
	t.Logf("the container's log holds %d bytes in %d files (a flood of %d written: %v)", total, len(files), logFlood, wrote)
}
