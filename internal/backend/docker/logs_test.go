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

// CheckLogBounded has a process of the sandbox write 16 MB to the stdout of its
// process 1 (where the engine takes the container's log from), and checks the engine's
// log on the host ends with the last line written and stays within its bound. Exported
// for the runsc tests.
func CheckLogBounded(t *testing.T, d *Docker, c *guestclient.Client, id backend.ID) {
	t.Helper()
	ctx := context.Background()
	var out strings.Builder
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c",
		"yes 0123456789abcdef0123456789abcdef0123456789abcdef | head -c " + strconv.Itoa(logFlood) + " >/proc/1/fd/1 && echo " + logEnd + " >/proc/1/fd/1"},
		Stdout: &out, Stderr: &out})
	if err != nil || code != 0 {
		t.Fatalf("writing to the container's stdout: exit %d, %v: %s", code, err, out.String())
	}
	ci, err := d.cli.ContainerInspect(ctx, containerName(id))
	if err != nil {
		t.Fatal(err)
	}
	if ci.LogPath == "" {
		t.Fatalf("the engine keeps no log file for the container (driver %s)", ci.HostConfig.LogConfig.Type)
	}
	// The engine copies the stream on its own time: wait for the last line.
	for deadline := time.Now().Add(30 * time.Second); ; {
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
	t.Logf("the container's log holds %d bytes in %d files after %d written", total, len(files), logFlood)
}
