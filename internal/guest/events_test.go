package guest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
	"github.com/paddockhq/paddock/internal/testenv"
)

// subscribe starts an Events.Subscribe call on srv and returns its events, heartbeats
// left out. It waits until the watchers have taken their first look, so that what the
// test does next is news to them.
func subscribe(t *testing.T, srv *Server) <-chan *guestpb.Event {
	t.Helper()
	stream, err := guestpb.NewDRPCEventsClient(dialGuest(t, srv)).Subscribe(t.Context(), &guestpb.SubscribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *guestpb.Event, 64)
	go func() {
		defer close(ch)
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			if ev.GetKind() != guestproto.EventHeartbeat {
				ch <- ev
			}
		}
	}()
	// The watchers' first look takes what is there as it is, and reports changes from then
	// on: wait until it is over (the second has begun), not for a time a loaded machine
	// may take longer than.
	for deadline := time.Now().Add(time.Minute); srv.looks.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the guest's watchers did not look twice in a minute")
		}
	}
	return ch
}

// next returns the next event for which match is true, failing after a few seconds.
func next(t *testing.T, ch <-chan *guestpb.Event, what string, match func(*guestpb.Event) bool) *guestpb.Event {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended before %s", what)
			}
			if match(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no event: %s", what)
		}
	}
}

func kindIs(kind string) func(*guestpb.Event) bool {
	return func(ev *guestpb.Event) bool { return ev.GetKind() == kind }
}

// TestSessionStatusEvents writes status files the ways their writers do (notify renames a
// temporary file into place, paddock's scripts write in place) and expects each at once.
func TestSessionStatusEvents(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	ch := subscribe(t, NewServer(Options{StatusDir: dir}))

	writeAtomic := func(name, content string) {
		tmp := filepath.Join(dir, name+".tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		write   func()
		kind    string
		want    map[string]string
		absent  string
		comment string
	}{
		{name: "notify", write: func() { writeAtomic("worker.json", `{"status":"working","time":1}`) },
			kind: guestproto.EventSessionStatus, want: map[string]string{"session": "worker", "status": "working"}},
		{name: "hook with a conversation id", write: func() {
			writeAtomic("worker.json", `{"status":"idle","time":2,"agent_session":"abc-123"}`)
		}, kind: guestproto.EventSessionStatus, want: map[string]string{"session": "worker", "status": "idle", "agent_session": "abc-123"}},
		{name: "in place", write: func() {
			if err := os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{"status":"starting"}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}, kind: guestproto.EventSessionStatus, want: map[string]string{"session": "other", "status": "starting"}},
		{name: "exited", write: func() { writeAtomic("worker.json", `{"status":"exited","exit_status":"3"}`) },
			kind: guestproto.EventSessionExited, want: map[string]string{"session": "worker", "exit_status": "3", "detail": "exit status 3"}, absent: "status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			tt.write()
			ev := next(t, ch, tt.name, kindIs(tt.kind))
			for k, v := range tt.want {
				if got := ev.GetAttrs()[k]; got != v {
					t.Errorf("attr %s = %q, want %q (event %v)", k, got, v, ev)
				}
			}
			if _, ok := ev.GetAttrs()[tt.absent]; tt.absent != "" && ok {
				t.Errorf("attr %s present: %v", tt.absent, ev)
			}
			// Pushed, not polled: well under the poll interval.
			if took := time.Since(start); took > pollInterval {
				t.Errorf("the event took %v", took)
			}
		})
	}

	// Files that are not statuses are not reported.
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{"), 0o644)
	writeAtomic("last.json", `{"status":"waiting"}`)
	if ev := next(t, ch, "waiting", kindIs(guestproto.EventSessionStatus)); ev.GetAttrs()["session"] != "last" {
		t.Errorf("event for a file that is not a status: %v", ev)
	}
}

// TestPortEvents opens a real listener and expects port-open with this process's name,
// then port-closed; the guest's own tunnel listener is never reported.
func TestPortEvents(t *testing.T) {
	srv := NewServer(Options{})
	ch := subscribe(t, srv)

	lctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	tunnel, err := guestpb.NewDRPCTunnelsClient(dialGuest(t, srv)).Listen(lctx, &guestpb.ListenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ready, err := tunnel.Recv()
	if err != nil {
		t.Fatal(err)
	}
	tunnelPort := strconv.Itoa(int(ready.GetReadyPort()))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ev := next(t, ch, "port-open "+port, func(ev *guestpb.Event) bool {
		if ev.GetKind() == guestproto.EventPortOpen && ev.GetAttrs()["port"] == tunnelPort {
			t.Errorf("the guest's own listener was reported: %v", ev)
		}
		return ev.GetKind() == guestproto.EventPortOpen && ev.GetAttrs()["port"] == port
	})
	comm, _ := os.ReadFile("/proc/self/comm")
	if got, want := ev.GetAttrs()["process"], strings.TrimSpace(string(comm)); got != want {
		t.Errorf("process %q, want %q", got, want)
	}
	if got := ev.GetAttrs()["pid"]; got != strconv.Itoa(os.Getpid()) {
		t.Errorf("pid %q, want %d", got, os.Getpid())
	}
	if got := ev.GetAttrs()["address"]; got != "127.0.0.1" {
		t.Errorf("address %q", got)
	}

	ln.Close()
	next(t, ch, "port-closed "+port, func(ev *guestpb.Event) bool {
		return ev.GetKind() == guestproto.EventPortClosed && ev.GetAttrs()["port"] == port
	})
}

// TestBranchEvents commits with real git in a watched workspace.
func TestBranchEvents(t *testing.T) {
	testenv.Program(t, "git", "apt-get install git")
	ws := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", ws, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("commit", "-q", "--allow-empty", "-m", "one")
	first := git("rev-parse", "HEAD")
	ch := subscribe(t, NewServer(Options{Workspace: ws}))

	git("commit", "-q", "--allow-empty", "-m", "two")
	ev := next(t, ch, "main moved", kindIs(guestproto.EventBranchMoved))
	if a := ev.GetAttrs(); a["branch"] != "main" || a["from"] != first || a["to"] != git("rev-parse", "HEAD") {
		t.Errorf("branch-moved %v", a)
	}
	git("branch", "feature/x")
	ev = next(t, ch, "feature/x created", kindIs(guestproto.EventBranchMoved))
	if a := ev.GetAttrs(); a["branch"] != "feature/x" || a["from"] != "" {
		t.Errorf("branch-moved %v", a)
	}
	git("pack-refs", "--all")
	git("branch", "-D", "feature/x")
	ev = next(t, ch, "feature/x deleted", kindIs(guestproto.EventBranchMoved))
	if a := ev.GetAttrs(); a["branch"] != "feature/x" || a["to"] != "" {
		t.Errorf("branch-moved %v", a)
	}
}

// TestSlowSubscriberIsDropped fills a subscriber that reads nothing: it is told it fell
// behind, and the others keep their events.
func TestSlowSubscriberIsDropped(t *testing.T) {
	h := newHub(nil)
	slow, unsubscribeSlow := h.subscribe()
	defer unsubscribeSlow()
	fast, unsubscribeFast := h.subscribe()
	defer unsubscribeFast()
	got := 0
	for i := range subscriberBuffer + 10 {
		h.publish(newEvent(guestproto.EventPortOpen, map[string]string{"port": strconv.Itoa(i)}))
		<-fast.ch
		got++
	}
	select {
	case <-slow.overflow:
	default:
		t.Fatal("the slow subscriber was not told it fell behind")
	}
	if got != subscriberBuffer+10 {
		t.Errorf("the other subscriber got %d events", got)
	}
}

func TestParseListeners(t *testing.T) {
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 12345 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000  1000        0 12346 1 0000000000000000 20 4 30 10 -1
   2: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 999 1 0000000000000000 100 0 0 10 0
`
	tcp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 777 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:2328 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 778 1 0000000000000000 100 0 0 10 0
`
	got := append(parseListeners([]byte(tcp)), parseListeners([]byte(tcp6))...)
	want := []listener{
		{port: 8080, addr: "127.0.0.1", inode: "12345"},
		{port: 80, addr: "0.0.0.0", inode: "999"},
		{port: 8000, addr: "::", inode: "777"},
		{port: 9000, addr: "::1", inode: "778"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("listener %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestTmuxReaperNudges stands in for a tmux server that missed its child's SIGCHLD: a
// process named like tmux's server that does not reap its ended child. Two looks later it
// has been sent a SIGCHLD.
func TestTmuxReaperNudges(t *testing.T) {
	testenv.Program(t, "python3", "apt-get install python3")
	dir := t.TempDir()
	got := filepath.Join(dir, "sigchld")
	script := `
import ctypes, os, signal, sys, time
ctypes.CDLL(None).prctl(15, b"tmux: server", 0, 0, 0)
signal.signal(signal.SIGCHLD, lambda *a: open(sys.argv[1], "a").write("x"))
if os.fork() == 0:
    os._exit(3)
time.sleep(30)
`
	cmd := exec.Command("python3", "-c", script, got)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	count := func() int { data, _ := os.ReadFile(got); return len(data) }
	// Python's start (ctypes) took over 5 s on a loaded machine: wait up to the stand-in's life.
	for deadline := time.Now().Add(25 * time.Second); count() < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stand-in never saw its child end")
		}
	}
	var r tmuxReaper
	r.scan("/proc")
	if n := count(); n != 1 {
		t.Fatalf("nudged at the first look (%d SIGCHLDs)", n)
	}
	r.scan("/proc")
	for deadline := time.Now().Add(5 * time.Second); count() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server of a lasting zombie got no SIGCHLD")
		}
	}
}

func TestProcState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stat")
	os.WriteFile(path, []byte("123 (tmux: server (x)) Z 45 123 123 0 -1 4194560"), 0o644)
	if state, ppid, ok := procState(new([]byte), path); !ok || state != 'Z' || ppid != 45 {
		t.Errorf("procState = %c %d %v", state, ppid, ok)
	}
}

// TestWatchPace: an idle sandbox's watchers slow down to a look every pollIdle, and
// anything happening (here what an exec does: poke) brings a look at once and the quick
// pace back. Counts of looks, not timings: a loaded machine only makes them fewer.
func TestWatchPace(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the watchers to go idle (about 10 s)")
	}
	t.Parallel()
	// A process table of its own, with no listener: the machine's own ports, opened and
	// closed by whatever else runs, would be changes that keep the quick pace.
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"net/tcp", "net/tcp6"} {
		if err := os.WriteFile(filepath.Join(proc, f), []byte("  sl  local_address rem_address   st\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := NewServer(Options{Workspace: t.TempDir(), Proc: proc})
	subscribe(t, srv)
	// Ten quiet looks at the quick pace, then 1 s, 2 s, then pollIdle between looks.
	time.Sleep(quietLooks*pollInterval + 3*time.Second + 500*time.Millisecond)
	before := srv.looks.Load()
	time.Sleep(pollIdle)
	if idle := srv.looks.Load() - before; idle > 2 {
		t.Fatalf("%d looks in %v of an idle sandbox, want at most 2", idle, pollIdle)
	}
	// Something happens: a look at once, then the quick pace.
	before = srv.looks.Load()
	srv.poke()
	deadline := time.Now().Add(2 * time.Second)
	for srv.looks.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("no look after a poke")
		}
		time.Sleep(10 * time.Millisecond)
	}
	before = srv.looks.Load()
	time.Sleep(pollIdle)
	if busy := srv.looks.Load() - before; busy < 4 {
		t.Fatalf("%d looks in %v after a poke, want the quick pace back (about %d)", busy, pollIdle, pollIdle/pollInterval)
	}
}
