package docker

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/paddockhq/paddock/internal/inside"
)

// dial attaches to an exec of `paddock guest connect`, which bridges its stdin and stdout
// to the resident guest's socket. The engine multiplexes the exec's stdout and stderr on
// the attached connection; stdcopy splits them, so the stream stays binary-safe.
func (d *Docker) dial(ctx context.Context, name string) (net.Conn, error) {
	exec, err := d.cli.ContainerExecCreate(ctx, name, container.ExecOptions{
		User: "1000:1000", AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Cmd: []string{guestPath, inside.GuestCommand, "connect", "--socket", guestSocket},
	})
	if err != nil {
		return nil, fmt.Errorf("exec the agent bridge in %s: %w", name, err)
	}
	resp, err := d.cli.ContainerExecAttach(ctx, exec.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("attach to the agent bridge in %s: %w", name, err)
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, io.Discard, resp.Reader)
		pw.CloseWithError(err)
	}()
	// When the container exits, the engine does not always end its execs' streams: under
	// runsc, an exec of a sandbox whose kernel was killed (a memory or pids limit) stays
	// open with nothing behind it. The connection ends with the container instead.
	watch, stop := context.WithCancel(context.WithoutCancel(ctx))
	c := &execConn{Conn: resp.Conn, r: pr, stop: stop}
	go func() {
		waitC, errC := d.cli.ContainerWait(watch, name, container.WaitConditionNextExit)
		select {
		case <-waitC:
			c.Close()
		case <-errC:
		}
	}()
	return c, nil
}

// execConn reads the demultiplexed stdout and writes to the exec's stdin.
type execConn struct {
	net.Conn
	r    *io.PipeReader
	stop context.CancelFunc // ends the watch on the container
}

func (c *execConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Bridged implements guestclient.Bridged: each connection is an exec.
func (c *execConn) Bridged() bool { return true }

func (c *execConn) Close() error {
	c.stop()
	c.r.Close()
	return c.Conn.Close()
}

// SetDeadline applies to writes only: reads come through a pipe.
func (c *execConn) SetDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(t) }

// SetReadDeadline is not supported on the demultiplexed stream; it is a no-op.
func (c *execConn) SetReadDeadline(t time.Time) error { return nil }
