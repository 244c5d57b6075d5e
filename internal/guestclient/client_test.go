package guestclient_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/guest"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
	"github.com/paddockhq/paddock/internal/guestproto"
)

func TestInfo(t *testing.T) {
	c, _ := guesttest.Connect(t)
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if info.GetPid() != int32(os.Getpid()) || info.GetUid() != int32(os.Getuid()) || info.GetHostname() != host ||
		info.GetProtocol() != guestproto.Protocol || info.GetVersion() != "v0.0.0-test" || info.GetSandbox() != "test" ||
		info.GetRssBytes() <= 0 || info.GetStartedUnix() <= 0 {
		t.Errorf("Info = %v", info)
	}
	if p := c.Peer(); p.Version != "v0.0.0-test" || p.Protocol != guestproto.Protocol {
		t.Errorf("Peer = %+v", p)
	}
}

func TestProtocolMismatch(t *testing.T) {
	dial := func(context.Context) (net.Conn, error) {
		a, b := guesttest.SocketPair(t)
		go func() {
			defer b.Close()
			bufio.NewReader(b).ReadString('\n')
			json.NewEncoder(b).Encode(guestproto.Hello{Magic: guestproto.Magic, Protocol: guestproto.Protocol + 1, Version: "future"})
		}()
		return a, nil
	}
	_, err := guestclient.New(t.Context(), dial, "v0.0.0-test")
	if !errors.Is(err, guestproto.ErrProtocolMismatch) {
		t.Errorf("New against a newer guest = %v, want ErrProtocolMismatch", err)
	}
}

func TestDone(t *testing.T) {
	t.Run("client closed", func(t *testing.T) {
		c, _ := guesttest.Connect(t)
		c.Close()
		waitClosed(t, c.Done())
	})
	t.Run("connection lost", func(t *testing.T) {
		srv := guest.NewServer(guest.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		served := make(chan error, 1)
		dial := func(context.Context) (net.Conn, error) {
			a, b := guesttest.SocketPair(t)
			go func() { served <- srv.ServeConn(ctx, b) }()
			return a, nil
		}
		c, err := guestclient.New(t.Context(), dial, "test")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Info(t.Context()); err != nil {
			t.Fatal(err)
		}
		cancel()
		waitClosed(t, c.Done())
		if err := <-served; !errors.Is(err, context.Canceled) {
			t.Errorf("ServeConn = %v, want context.Canceled", err)
		}
		if _, err := c.Info(t.Context()); err == nil {
			t.Error("Info on a dead connection succeeded")
		}
	})
}

func waitClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("Done was not closed")
	}
}

// TestServeConcurrentClients serves two clients from one resident guest: both work at
// once, and one going away leaves the other's calls running.
func TestServeConcurrentClients(t *testing.T) {
	dir, err := os.MkdirTemp("", "paddock-guest")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := guest.NewServer(guest.Options{Version: "test"})
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	dial := func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
	a, err := guestclient.New(t.Context(), dial, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := guestclient.New(t.Context(), dial, "test")
	if err != nil {
		t.Fatal(err)
	}

	// a runs a process that waits for its input while b comes and goes.
	inR, inW := net.Pipe()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		code, err := a.Exec(t.Context(), guestclient.ExecOptions{Argv: []string{"cat"}, Stdin: inR, Stdout: &out})
		if err == nil && code != 0 {
			err = fmt.Errorf("exit code %d", code)
		}
		done <- err
	}()
	var wg sync.WaitGroup
	for _, c := range []*guestclient.Client{a, b} {
		wg.Go(func() {
			var o bytes.Buffer
			if _, err := c.Exec(t.Context(), guestclient.ExecOptions{Argv: []string{"echo", "hi"}, Stdout: &o}); err != nil || o.String() != "hi\n" {
				t.Errorf("concurrent exec: %q, %v", o.String(), err)
			}
		})
	}
	wg.Wait()
	b.Close()
	waitClosed(t, b.Done())
	fmt.Fprint(inW, "still here")
	inW.Close()
	if err := <-done; err != nil || out.String() != "still here" {
		t.Errorf("exec on the other client: %q, %v", out.String(), err)
	}

	cancel()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Errorf("Serve = %v, want context.Canceled", err)
	}
	waitClosed(t, a.Done())
}

func TestEvents(t *testing.T) {
	c, _ := guesttest.Connect(t)
	ctx, cancel := context.WithCancel(t.Context())
	events, err := c.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.GetKind() != "heartbeat" || ev.GetTimeUnixNano() == 0 {
			t.Errorf("first event %v, want a heartbeat", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no heartbeat")
	}
	cancel()
	for range events { // the channel is closed once the call has ended
	}
}

// TestManyCallsAtOnce: every call has a yamux stream of its own, and more calls than the
// session's backlog of unanswered streams (256) at once all run, none waiting for
// another: 400 processes that each wait for all of them to have started.
func TestManyCallsAtOnce(t *testing.T) {
	c, _ := guesttest.Connect(t)
	const n = 400
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// Each marks its start, then waits (without a process a look) for the go file.
	const script = `open(F, ">", "$ARGV[0]/$ARGV[1]") or die; close F;
until (-e "$ARGV[0]/go") { select(undef, undef, undef, 0.1) } print "$ARGV[1]\n";`
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			out, _, code, err := c.Output(ctx, guestclient.ExecOptions{Argv: []string{"perl", "-e", script, dir, fmt.Sprint(i)}}, 64)
			if err == nil && (code != 0 || out != fmt.Sprintf("%d\n", i)) {
				err = fmt.Errorf("call %d: exit %d, output %q", i, code, out)
			}
			errs <- err
		})
	}
	for {
		entries, _ := os.ReadDir(dir)
		if len(entries) == n {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d calls started", len(entries), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Info(ctx); err != nil {
		t.Errorf("after %d calls at once: %v", n, err)
	}
}
