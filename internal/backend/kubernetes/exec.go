package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/tailbuf"
)

// stream runs argv in a container of a pod through the API server's exec: over
// WebSocket, or SPDY where the server or a proxy between refuses the upgrade.
func (c *cluster) stream(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	req := c.api.core.Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv,
			Stdin: stdin != nil, Stdout: stdout != nil, Stderr: stderr != nil}, params)
	ws, err := remotecommand.NewWebSocketExecutor(c.config, "GET", req.URL().String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.config, "POST", req.URL())
	if err != nil {
		return err
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	return exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
}

// run runs argv to its end and returns its exit code and what it wrote; err is for a
// failure to run it at all.
func (c *cluster) run(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader) (int, string, error) {
	var out bytes.Buffer
	err := c.stream(ctx, ns, pod, container, argv, stdin, &out, &out)
	var exit utilexec.ExitError
	if errors.As(err, &exit) && exit.Exited() {
		return exit.ExitStatus(), out.String(), nil
	}
	if err != nil {
		return -1, out.String(), err
	}
	return 0, out.String(), nil
}

// Dial implements backend.Backend: an exec of `paddock guest connect` in the sandbox's
// container, which bridges its stdin and stdout to the resident guest's socket.
func (k *Kubernetes) Dial(ctx context.Context, id backend.ID) (net.Conn, error) {
	rec, c, err := k.locate(id)
	if err != nil {
		return nil, err
	}
	w, err := c.watch(ctx, rec.Namespace)
	if err != nil {
		return nil, err
	}
	if !containerRunning(w.pod(podName(id)), sandboxContainer) {
		return nil, fmt.Errorf("sandbox %s: %w", id, backend.ErrNotRunning)
	}
	return c.dial(ctx, rec.Namespace, podName(id))
}

func (c *cluster) dial(ctx context.Context, ns, pod string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ours, theirs := net.Pipe()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	conn := &execConn{Conn: ours, cancel: cancel}
	go func() {
		errOut := &tailbuf.Buffer{}
		err := c.stream(sctx, ns, pod, sandboxContainer,
			[]string{inside.GuestBinary, inside.GuestCommand, "connect", "--socket", guestSocket}, theirs, theirs, errOut)
		if err != nil && sctx.Err() == nil {
			conn.err.Store(fmt.Errorf("the guest bridge in %s/%s: %w%s", ns, pod, err, suffix(errOut)))
		}
		theirs.Close()
	}()
	return conn, nil
}

// execConn is one end of the pipe an exec streams; closing it ends the exec.
type execConn struct {
	net.Conn
	cancel context.CancelFunc
	err    atomic.Value // why the exec ended, when it failed
}

// Read returns why the exec failed, where the pipe alone would say only EOF.
func (c *execConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err == io.EOF {
		if cause, ok := c.err.Load().(error); ok {
			return n, cause
		}
	}
	return n, err
}

// Bridged implements guestclient.Bridged: each connection is an exec through the API server.
func (c *execConn) Bridged() bool { return true }

func (c *execConn) Close() error {
	err := c.Conn.Close()
	c.cancel()
	return err
}

// suffix is ": " and what t kept, or "" when it kept nothing.
func suffix(t *tailbuf.Buffer) string {
	if s := strings.TrimSpace(t.String()); s != "" {
		return ": " + s
	}
	return ""
}
