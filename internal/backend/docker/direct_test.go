package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/testenv"
)

// directBackend is a backend with its own directory, as the daemon makes it, and the
// small guest; it skips (fails, when strict) without a Docker engine here.
func directBackend(t *testing.T) (*Docker, sandbox.GuestBinary) {
	t.Helper()
	d, err := New(backend.Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Available(context.Background()); err != nil {
		testenv.Missing(t, "docker is not available: "+err.Error(), "sudo apt-get install docker.io, start dockerd, then paddock image build")
	}
	if !d.canDirect() {
		t.Skip("the direct channel needs root and a local engine")
	}
	guest, err := testenv.SmallGuest()
	if err != nil {
		t.Fatal(err)
	}
	agent, err := sandbox.InstallGuest(guest, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d, agent
}

// startSandbox makes and starts a sandbox named name, removed when the test ends.
func startSandbox(t *testing.T, d *Docker, agent sandbox.GuestBinary, name string) backend.ID {
	t.Helper()
	ctx := context.Background()
	id := backend.ID(fmt.Sprintf("%s%d", name, time.Now().UnixNano()%100000000))
	if err := d.Create(ctx, backend.Spec{ID: id, Name: name, GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Destroy(context.Background(), id) })
	if err := d.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// connect returns a client of the sandbox's guest through Dial.
func connect(t *testing.T, d *Docker, id backend.ID) *guestclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) { return d.Dial(ctx, id) }, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// runInside runs a shell script in the sandbox as its user, as an agent would.
func runInside(t *testing.T, c *guestclient.Client, script string) {
	t.Helper()
	var out strings.Builder
	code, err := c.Exec(context.Background(), guestclient.ExecOptions{Argv: []string{"sh", "-c", script}, Stdout: &out, Stderr: &out})
	if err != nil || code != 0 {
		t.Fatalf("%s: exit %d, %v: %s", script, code, err, out.String())
	}
}

// hostListener is a unix socket on the host standing for a host service a sandbox must
// never reach through the daemon; it records every connection and what was sent on it.
type hostListener struct {
	ln    *net.UnixListener
	done  chan struct{}
	conns int
	bytes int
}

func listenHost(t *testing.T, path string) *hostListener {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	h := &hostListener{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.conns++
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, _ := io.Copy(io.Discard, c)
			h.bytes += int(n)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return h
}

// sent stops the listener and returns how many connections it had and the bytes sent
// on them: a connect on a unix socket is queued before it returns, so one made by an
// earlier Dial is accepted within the grace.
func (h *hostListener) sent(t *testing.T) (conns, bytes int) {
	t.Helper()
	h.ln.SetDeadline(time.Now().Add(300 * time.Millisecond))
	<-h.done
	return h.conns, h.bytes
}

// reachesGuest checks a fresh Dial still reaches the sandbox's own guest (through the
// exec bridge when the direct channel was refused): the agent inside cannot cut the
// daemon off by tampering with its socket.
func reachesGuest(t *testing.T, d *Docker, id backend.ID, name string) {
	t.Helper()
	info, err := connect(t, d, id).Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.GetSandbox() != name {
		t.Fatalf("Dial reached a guest of sandbox %q, want %q", info.GetSandbox(), name)
	}
}

// TestDirectChannel: the daemon's connections go through the socket in the sandbox's
// directory, not an exec, and that directory is the container's: no host path.
func TestDirectChannel(t *testing.T) {
	d, agent := directBackend(t)
	ctx := context.Background()
	id := startSandbox(t, d, agent, "direct")
	conn, err := d.Dial(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := conn.(*net.UnixConn); !ok {
		t.Fatalf("Dial went through %T, not the direct channel", conn)
	}
	conn.Close()
	c := connect(t, d, id)
	CheckLogBounded(t, d, c, id)
	// The exec bridge's socket gone, the daemon still reaches the guest.
	runInside(t, c, "rm /run/paddock/agent.sock")
	reachesGuest(t, d, id, "direct")
	if entries, err := os.ReadDir(d.dir); err != nil || len(entries) > 0 {
		t.Fatalf("the backend's directory on the host holds %v (%v), want nothing", entries, err)
	}
}

// TestDirectEscape: an agent inside owns its socket directory and tries to make the
// daemon, which runs as root on the host, connect somewhere else: a symlink to a host
// socket, a FIFO, another sandbox's guest, a host process's socket; and to make Destroy
// remove host files through a symlink. Each is refused, the daemon still reaches the
// sandbox's own guest through the exec bridge, and the host is untouched.
func TestDirectEscape(t *testing.T) {
	d, agent := directBackend(t)
	ctx := context.Background()
	id := startSandbox(t, d, agent, "escape")
	c := connect(t, d, id)
	hostDir := t.TempDir()

	t.Run("FillItsDirectory", func(t *testing.T) {
		// What an agent can make where its socket is: a setuid executable, a FIFO, a
		// symlink, a hardlink and a 100 MB file. None of it may land on the host.
		var out strings.Builder
		code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", "cd " + directTarget + " && " +
			`printf '#!/bin/sh\nid\n' >suid; chmod 4755 suid; mkfifo fifo; ln -s /etc/shadow link; ln suid hard; ` +
			"head -c 100000000 /dev/zero >big 2>/dev/null; wc -c <big; grep ' " + directTarget + " ' /proc/self/mountinfo"},
			Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatalf("exit %d, %v: %s", code, err, out.String())
		}
		var landed []string
		filepath.WalkDir(d.dir, func(path string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				landed = append(landed, path)
			}
			return nil
		})
		if len(landed) > 0 {
			t.Errorf("what the agent made by its socket landed on the host: %s", strings.Join(landed, ", "))
		}
		size, mount, _ := strings.Cut(out.String(), "\n")
		if n, err := strconv.Atoi(strings.TrimSpace(size)); err != nil || n > 64<<10 {
			t.Errorf("the agent wrote %s bytes by its socket, want at most 64 KiB:\n%s", size, out.String())
		}
		for _, flag := range []string{"nosuid", "nodev", "noexec"} {
			if !strings.Contains(mount, flag) {
				t.Errorf("the socket's directory is mounted without %s: %s", flag, mount)
			}
		}
		runInside(t, c, "cd "+directTarget+" && rm -f suid fifo link hard big")
		conn, err := d.Dial(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
		if _, ok := conn.(*net.UnixConn); !ok {
			t.Fatalf("after the agent filled its directory, Dial went through %T, not the direct channel", conn)
		}
	})

	t.Run("SymlinkToHostSocket", func(t *testing.T) {
		hostSock := filepath.Join(hostDir, "service.sock")
		host := listenHost(t, hostSock)
		runInside(t, c, "rm -f "+directSocket+" && ln -s "+hostSock+" "+directSocket)
		if _, err := d.dialDirect(ctx, id); err == nil || errors.Is(err, errNoDirect) {
			t.Fatalf("the direct channel followed the sandbox's symlink: %v", err)
		}
		reachesGuest(t, d, id, "escape")
		if conns, n := host.sent(t); conns != 0 || n != 0 {
			t.Fatalf("the daemon connected to the host's socket %d times and sent it %d bytes", conns, n)
		}
	})

	t.Run("FIFO", func(t *testing.T) {
		runInside(t, c, "rm -f "+directSocket+" && mkfifo "+directSocket)
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := d.dialDirect(ctx, id); err == nil || !strings.Contains(err.Error(), "not a socket") {
			t.Fatalf("the direct channel took a FIFO for the guest's socket: %v", err)
		}
		reachesGuest(t, d, id, "escape")
	})

	t.Run("HostProcessSocket", func(t *testing.T) {
		// A socket bound in the sandbox's directory by a host process (root here).
		runInside(t, c, "rm -f "+directSocket)
		p, err := d.containerProc(ctx, id, true)
		if err != nil {
			t.Fatal(err)
		}
		host := listenHost(t, fmt.Sprintf("/proc/%d/root%s", p.pid, directSocket))
		if _, err := d.dialDirect(ctx, id); err == nil || !strings.Contains(err.Error(), "uid") {
			t.Fatalf("the direct channel accepted a host process's socket: %v", err)
		}
		reachesGuest(t, d, id, "escape")
		// Connected (its peer is known only then), checked, closed: not a byte sent.
		if _, n := host.sent(t); n != 0 {
			t.Fatalf("the daemon sent %d bytes to a host process's socket", n)
		}
	})

	t.Run("OtherSandboxGuest", func(t *testing.T) {
		// Another sandbox's guest (the same user, another container) answering for this
		// one: no link from one container's tmpfs reaches another's, so its connection is
		// handed to this sandbox's check as a bind mount in its place would hand it.
		other := startSandbox(t, d, agent, "other")
		conn, err := d.dialDirect(ctx, other)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := d.checkPeer(ctx, id, conn.(*net.UnixConn)); err == nil || !strings.Contains(err.Error(), "not in its container") {
			t.Fatalf("the direct channel accepted another sandbox's guest: %v", err)
		}
		reachesGuest(t, d, id, "escape")
	})

	t.Run("DestroyThroughSymlink", func(t *testing.T) {
		canary := filepath.Join(hostDir, "canary")
		if err := os.WriteFile(canary, []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
		runInside(t, c, "ln -s "+hostDir+" "+directTarget+"/hostdir && ln -s "+canary+" "+directTarget+"/canary")
		if err := d.Destroy(ctx, id); err != nil {
			t.Fatal(err)
		}
		if data, err := os.ReadFile(canary); err != nil || string(data) != "keep" {
			t.Fatalf("Destroy removed or changed a host file through the sandbox's symlink: %q, %v", data, err)
		}
	})
}

// TestDirectOlderSandbox: a sandbox whose container was made without the direct channel
// (by an older paddock, or a daemon that could not have one) keeps working through the
// exec bridge when a daemon with the direct channel makes (a no-op) and starts it.
func TestDirectOlderSandbox(t *testing.T) {
	d, agent := directBackend(t)
	ctx := context.Background()
	older, err := New(backend.Env{})
	if err != nil {
		t.Fatal(err)
	}
	id := backend.ID(fmt.Sprintf("older%d", time.Now().UnixNano()%100000000))
	spec := backend.Spec{ID: id, Name: "older", GuestBinary: agent.Path, GuestSHA256: agent.SHA256}
	if err := older.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Destroy(context.Background(), id) })
	if err := d.Create(ctx, spec); err != nil {
		t.Fatalf("Create of a sandbox made before: %v", err)
	}
	if _, err := os.Lstat(d.directDir(id)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Create left a socket directory for a container that does not mount it (%v)", err)
	}
	if err := d.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	conn, err := d.Dial(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, ok := conn.(*net.UnixConn); ok {
		t.Fatal("Dial claims a direct channel the container does not have")
	}
	reachesGuest(t, d, id, "older")
}
