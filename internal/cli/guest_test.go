package cli_test

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/servecmd"
)

// TestGuestConnectBridgesStdio runs a resident guest on a unix socket and reaches it
// through `paddock guest connect`, the bridge for backends whose only channel to a
// sandbox is a process's stdin and stdout (docker exec, ssh).
func TestGuestConnectBridgesStdio(t *testing.T) {
	dir, err := os.MkdirTemp("", "pdk")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "agent.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	f.More = servecmd.Commands
	go cli.Run(ctx, f, []string{"guest", "serve", "--socket", sock, "--sandbox", "bridged"})
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}

	dial := func(ctx context.Context) (net.Conn, error) {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, self, "guest", "connect", "--socket", sock)
		cmd.Args[0] = "paddock"
		return commandConn(cmd)
	}
	c, err := guestclient.New(ctx, dial, "test")
	if err != nil {
		t.Fatalf("connect through the bridge: %v", err)
	}
	defer c.Close()
	info, err := c.Info(ctx)
	if err != nil || info.Sandbox != "bridged" {
		t.Fatalf("Info through the bridge: %+v %v", info, err)
	}
	var out strings.Builder
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", "cat; exit 4"},
		Stdin: strings.NewReader("through the bridge"), Stdout: &out})
	if err != nil || code != 4 || out.String() != "through the bridge" {
		t.Fatalf("exec through the bridge: code %d out %q err %v", code, out.String(), err)
	}
}

// commandConn runs cmd and makes its stdin and stdout one net.Conn.
func commandConn(cmd *exec.Cmd) (net.Conn, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &procConn{r: stdout, w: stdin, cmd: cmd}, nil
}

type procConn struct {
	r   io.ReadCloser
	w   io.WriteCloser
	cmd *exec.Cmd
}

func (c *procConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *procConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *procConn) Close() error {
	c.w.Close()
	c.cmd.Process.Kill()
	return c.cmd.Wait()
}
func (c *procConn) LocalAddr() net.Addr                { return &net.UnixAddr{} }
func (c *procConn) RemoteAddr() net.Addr               { return &net.UnixAddr{} }
func (c *procConn) SetDeadline(t time.Time) error      { return nil }
func (c *procConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *procConn) SetWriteDeadline(t time.Time) error { return nil }
