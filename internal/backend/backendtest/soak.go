package backendtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend/conform"
	"github.com/paddockhq/paddock/internal/guestclient"
)

// SoakEnv names the environment variable that sets the number of soak cycles by hand
// (PADDOCK_SOAK=1000), in place of the short default a backend's test passes.
const SoakEnv = "PADDOCK_SOAK"

// Soak runs cycles of create, start, exec and destroy, and checks they leave nothing
// behind: after every cycle the harness's Leftovers for that sandbox (processes, mounts,
// cgroups, containers, volumes); at the end, no new entry in the temporary directory or
// in the backend's directory, no mount naming that directory, no child process of this
// one, and no growth in this process's open files or goroutines.
func Soak(t *testing.T, h Harness, cycles int) {
	if s := os.Getenv(SoakEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a number of cycles", SoakEnv, s)
		}
		cycles = n
	}
	// A temporary directory of its own, so that other tests running at the same time do
	// not change what is counted. Set on the process (so a soak runs serially): the
	// backend in this process and the programs it starts take it from there.
	tmp, err := os.MkdirTemp("", "soak")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)

	cycle(t, h, 0) // caches, pooled connections and the like settle here
	before := takeSnapshot(t, h)
	start := time.Now()
	for i := 1; i <= cycles; i++ {
		cycle(t, h, i)
	}
	t.Logf("%d cycles in %s", cycles, time.Since(start).Round(time.Millisecond))
	after := settle(t, h, before)
	if diff := before.diff(after); diff != "" {
		t.Fatalf("after %d cycles:\n%s", cycles, diff)
	}
}

// cycle creates, starts, uses and destroys one sandbox, and checks it left nothing.
func cycle(t *testing.T, h Harness, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := conform.NewID()
	if err := h.Backend.Create(ctx, h.Spec(id)); err != nil {
		t.Fatalf("cycle %d: Create: %v", n, err)
	}
	err := func() error {
		if err := h.Backend.Start(ctx, id); err != nil {
			return fmt.Errorf("start: %w", err)
		}
		c, err := guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) { return h.Backend.Dial(ctx, id) }, "soak")
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		defer c.Close()
		var out strings.Builder
		code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", "echo cycle " + strconv.Itoa(n)}, Stdout: &out})
		if err != nil || code != 0 || out.String() != fmt.Sprintf("cycle %d\n", n) {
			return fmt.Errorf("exec: code %d, %v, output %q", code, err, out.String())
		}
		return nil
	}()
	if derr := h.Backend.Destroy(ctx, id); derr != nil && err == nil {
		err = fmt.Errorf("destroy: %w", derr)
	}
	if err != nil {
		t.Fatalf("cycle %d: %v", n, err)
	}
	if h.Leftovers != nil {
		if left := h.Leftovers(id); len(left) > 0 {
			t.Fatalf("cycle %d left behind:\n  %s", n, strings.Join(left, "\n  "))
		}
	}
}

// snapshot is what this process and the backend hold on the host at one time.
type snapshot struct {
	tmp, dir   []string // entries of the temporary and backend directories
	mounts     int      // mounts naming the backend directory
	children   []string // child processes of this one
	fds        int      // open file descriptors of this process
	goroutines int
}

func takeSnapshot(t *testing.T, h Harness) snapshot {
	t.Helper()
	s := snapshot{tmp: dirNames(t, os.TempDir()), fds: len(dirNames(t, "/proc/self/fd")), goroutines: runtime.NumGoroutine()}
	if h.Dir != "" {
		s.dir = dirNames(t, h.Dir)
		mounts, _ := os.ReadFile("/proc/self/mountinfo")
		s.mounts = strings.Count(string(mounts), h.Dir)
	}
	self := strconv.Itoa(os.Getpid())
	for _, p := range dirNames(t, "/proc") {
		stat, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == self {
				s.children = append(s.children, p+" "+string(stat[:i+1]))
			}
		}
	}
	return s
}

// settle waits a few seconds for connections and goroutines that are closing to finish
// before taking the last snapshot.
func settle(t *testing.T, h Harness, before snapshot) snapshot {
	deadline := time.Now().Add(5 * time.Second)
	for {
		after := takeSnapshot(t, h)
		if before.diff(after) == "" || time.Now().After(deadline) {
			return after
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Slack for counts that pooled connections make move by one or two.
const fdSlack, goroutineSlack = 4, 8

func (s snapshot) diff(after snapshot) string {
	var out []string
	if added := newNames(s.tmp, after.tmp); len(added) > 0 {
		out = append(out, "new in the temporary directory: "+strings.Join(added, " "))
	}
	if added := newNames(s.dir, after.dir); len(added) > 0 {
		out = append(out, "new in the backend's directory: "+strings.Join(added, " "))
	}
	if after.mounts > s.mounts {
		out = append(out, fmt.Sprintf("%d more mounts name the backend's directory", after.mounts-s.mounts))
	}
	if added := newNames(s.children, after.children); len(added) > 0 {
		out = append(out, "new child processes: "+strings.Join(added, ", "))
	}
	if after.fds > s.fds+fdSlack {
		out = append(out, fmt.Sprintf("open files went from %d to %d", s.fds, after.fds))
	}
	if after.goroutines > s.goroutines+goroutineSlack {
		out = append(out, fmt.Sprintf("goroutines went from %d to %d", s.goroutines, after.goroutines))
	}
	return strings.Join(out, "\n")
}

func newNames(before, after []string) []string {
	var out []string
	for _, n := range after {
		if !slices.Contains(before, n) {
			out = append(out, n)
		}
	}
	return out
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}
