package docker

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// dial attaches to an exec of `paddock agent connect`, which bridges its stdin and stdout
// to the resident agent's socket. The engine multiplexes the exec's stdout and stderr on
// the attached connection; stdcopy splits them, so the stream stays binary-safe.
func (d *Docker) dial(ctx context.Context, name string) (net.Conn, error) {
	exec, err := d.cli.ContainerExecCreate(ctx, name, container.ExecOptions{
		User: "1000:1000", AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Cmd: []string{agentPath, "agent", "connect", "--socket", agentSocket},
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
	return &execConn{Conn: resp.Conn, r: pr}, nil
}

// execConn reads the demultiplexed stdout and writes to the exec's stdin.
type execConn struct {
	net.Conn
	r *io.PipeReader
}

func (c *execConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *execConn) Close() error {
	c.r.Close()
	return c.Conn.Close()
}

// SetDeadline applies to writes only: reads come through a pipe.
func (c *execConn) SetDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(t) }

// SetReadDeadline is not supported on the demultiplexed stream; it is a no-op.
func (c *execConn) SetReadDeadline(t time.Time) error { return nil }
