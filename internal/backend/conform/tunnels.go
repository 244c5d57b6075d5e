package conform

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
)

// echoServer is a host-side TCP server that answers each line with "echo: LINE".
func echoServer(t T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r := bufio.NewReader(conn)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					fmt.Fprintf(conn, "echo: %s", line)
				}
			}()
		}
	}()
	return ln
}

func testTunnels(t T, sb *sandbox) {
	ctx := ctxT(t)
	echo := echoServer(t)
	dialEcho := func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", echo.Addr().String())
	}
	rev, err := sb.client.Reverse(ctx, 0, dialEcho)
	if err != nil {
		t.Fatalf("Reverse: %v", err)
	}
	defer rev.Close()
	if rev.Port() == 0 {
		t.Fatal("Reverse reported port 0")
	}

	t.Run("reverse from a sandbox process", func(t T) {
		// bash's /dev/tcp connects from inside the sandbox to its own loopback.
		script := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d; echo hello >&3; head -n1 <&3`, rev.Port())
		code, out, errOut := runWith(t, sb.client, execOpts("bash", "-c", script))
		if code != 0 || out != "echo: hello\n" {
			t.Fatalf("code %d out %q err %q", code, out, errOut)
		}
	})
	t.Run("forward", func(t T) {
		// Forward dials the sandbox's loopback, where the reverse listener answers: the
		// bytes cross the guest twice and reach the host echo server.
		conn, err := sb.client.Forward(ctx, rev.Port())
		if err != nil {
			t.Fatalf("Forward: %v", err)
		}
		defer conn.Close()
		payload := strings.Repeat("x", 100000)
		go fmt.Fprintf(conn, "first\n%s\n", payload)
		r := bufio.NewReader(conn)
		for _, want := range []string{"echo: first\n", "echo: " + payload + "\n"} {
			line, err := r.ReadString('\n')
			if err != nil || line != want {
				t.Fatalf("read %d bytes (%v), want %d", len(line), err, len(want))
			}
		}
	})
	t.Run("forward half close", func(t T) {
		code, _, _ := runWith(t, sb.client, execOpts("sh", "-c", "command -v python3"))
		if code != 0 {
			t.Skip("no python3 in the sandbox image to run a listener")
		}
		port := freeLoopbackPort(t, sb)
		lctx, stop := context.WithCancel(ctx)
		defer stop()
		go sb.client.Exec(lctx, execOpts("python3", "-c", fmt.Sprintf(`
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", %d)); s.listen(1)
c, _ = s.accept(); data = b""
while True:
    b = c.recv(65536)
    if not b: break
    data += b
c.sendall(b"got %%d bytes" %% len(data)); c.close()
`, port)))
		var conn net.Conn
		for i := 0; i < 100; i++ {
			if conn, err = sb.client.Forward(ctx, port); err == nil {
				break
			}
			sleepShort()
		}
		if err != nil {
			t.Fatalf("Forward to a sandbox listener: %v", err)
		}
		defer conn.Close()
		conn.Write([]byte(strings.Repeat("y", 300000)))
		cw, ok := conn.(interface{ CloseWrite() error })
		if !ok {
			t.Fatal("the forwarded conn has no CloseWrite")
		}
		cw.CloseWrite()
		reply, _ := io.ReadAll(conn)
		if string(reply) != "got 300000 bytes" {
			t.Fatalf("reply %q", reply)
		}
	})
	t.Run("forward to a closed port", func(t T) {
		if conn, err := sb.client.Forward(ctx, freeLoopbackPort(t, sb)); err == nil {
			conn.Close()
			t.Fatal("Forward to a port nobody listens on succeeded")
		}
	})
}
