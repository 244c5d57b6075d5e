package guestclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
	"github.com/paddockhq/paddock/internal/limitbuf"
	"github.com/paddockhq/paddock/internal/tailbuf"
)

// stdinBufferSize is the read size for a process's stdin.
const stdinBufferSize = 32 << 10

// Size is a terminal size.
type Size struct{ Rows, Cols uint16 }

// ExecOptions describes a process for Exec.
type ExecOptions struct {
	// Argv is the program and its arguments; the program is looked up in PATH.
	Argv []string
	// Env is added, as KEY=VALUE, over the sandbox's base environment.
	Env []string
	// Dir is the working directory; /workspace (inside.Workspace; "/" when that is missing) when empty.
	Dir string
	// TTY runs the process on a pseudo-terminal of size Size; all its output then comes
	// to Stdout.
	TTY  bool
	Size Size
	// Stdin is the process's input; nil gives it none (its stdin is closed at once).
	// With TTY, the end of Stdin is not passed on; the process ends on its own or by a
	// signal. Exec does not wait for a pending Stdin.Read when the process has exited.
	Stdin io.Reader
	// Stdout and Stderr receive the output; nil discards it.
	Stdout, Stderr io.Writer
	// Resize, optional, changes the terminal size of a TTY process.
	Resize <-chan Size
	// Signal, optional, delivers signals to the process's process group.
	Signal <-chan syscall.Signal
}

// Exec runs a process and returns its exit code once all its output has been written:
// 128+N when signal N killed it. A process that could not start returns code 127 and an
// *ExecStartError with the guest's explanation. When ctx is done the guest kills the
// process.
func (c *Client) Exec(ctx context.Context, opts ExecOptions) (int, error) {
	if len(opts.Argv) == 0 {
		return -1, errors.New("exec: empty argv")
	}
	op := "exec " + opts.Argv[0]
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.exec.Run(ctx)
	if err != nil {
		return -1, translate(ctx, op, err)
	}
	s := &execSender{stream: stream}
	defer s.stop()
	err = s.send(&guestpb.ExecRequest{Msg: &guestpb.ExecRequest_Start{Start: &guestpb.ExecStart{
		Argv: opts.Argv,
		Env:  opts.Env,
		Dir:  opts.Dir,
		Tty:  opts.TTY,
		Rows: uint32(opts.Size.Rows),
		Cols: uint32(opts.Size.Cols),
	}}})
	if err != nil && !errors.Is(err, io.EOF) {
		return -1, translate(ctx, op, err)
	}
	if opts.Stdin == nil {
		_ = s.send(&guestpb.ExecRequest{Msg: &guestpb.ExecRequest_CloseStdin{CloseStdin: true}})
	} else {
		go s.pumpStdin(opts.Stdin)
	}
	if opts.Resize != nil {
		go s.forwardResizes(ctx, opts.Resize)
	}
	if opts.Signal != nil {
		go s.forwardSignals(ctx, opts.Signal)
	}
	return c.execOutput(ctx, op, stream, opts)
}

// Output runs a process as Exec does and returns its standard output, up to max bytes,
// and the end of its standard error. What a program in the sandbox prints is its
// choice: more than max fails the call, with an error that wraps
// *limitbuf.TooLargeError, rather than being held, or cut short and taken as whole.
func (c *Client) Output(ctx context.Context, opts ExecOptions, max int) (stdout, stderr string, code int, err error) {
	out := limitbuf.Buffer{Max: max}
	var errOut tailbuf.Buffer
	opts.Stdout, opts.Stderr = &out, &errOut
	code, err = c.Exec(ctx, opts)
	var tooLarge *limitbuf.TooLargeError
	if errors.As(err, &tooLarge) && len(opts.Argv) > 0 {
		err = fmt.Errorf("%s in the sandbox printed too much: %w", opts.Argv[0], tooLarge)
	}
	return out.String(), errOut.String(), code, err
}

// execOutput writes the process's output until its exit status arrives.
func (c *Client) execOutput(ctx context.Context, op string, stream guestpb.DRPCExec_RunClient, opts ExecOptions) (int, error) {
	stdout, stderr := opts.Stdout, opts.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	var exit *guestpb.ExecExit
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return -1, translate(ctx, op, err)
		}
		switch m := resp.GetMsg().(type) {
		case *guestpb.ExecResponse_Stdout:
			if _, err := stdout.Write(m.Stdout); err != nil {
				return -1, fmt.Errorf("%s: write stdout: %w", op, err)
			}
		case *guestpb.ExecResponse_Stderr:
			if _, err := stderr.Write(m.Stderr); err != nil {
				return -1, fmt.Errorf("%s: write stderr: %w", op, err)
			}
		case *guestpb.ExecResponse_Exit:
			exit = m.Exit
		}
	}
	if exit == nil {
		return -1, fmt.Errorf("%s: the guest ended the call without an exit status", op)
	}
	if exit.GetError() != "" {
		return int(exit.GetCode()), &ExecStartError{Argv: opts.Argv, Message: exit.GetError()}
	}
	return int(exit.GetCode()), nil
}

// execSender sends the requests of one Exec call from any goroutine, one at a time, and
// not at all once the call has returned.
type execSender struct {
	stream  guestpb.DRPCExec_RunClient
	mu      sync.Mutex
	stopped atomic.Bool
}

func (s *execSender) send(m *guestpb.ExecRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped.Load() {
		return io.EOF
	}
	return s.stream.Send(m)
}

// stop makes later sends fail. It does not wait for a send in progress, which the
// call's cancellation ends.
func (s *execSender) stop() { s.stopped.Store(true) }

// pumpStdin sends r as the process's stdin, then close_stdin.
func (s *execSender) pumpStdin(r io.Reader) {
	buf := make([]byte, stdinBufferSize)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if s.send(&guestpb.ExecRequest{Msg: &guestpb.ExecRequest_Stdin{Stdin: buf[:n]}}) != nil {
				return
			}
		}
		if err != nil {
			_ = s.send(&guestpb.ExecRequest{Msg: &guestpb.ExecRequest_CloseStdin{CloseStdin: true}})
			return
		}
	}
}

func (s *execSender) forwardResizes(ctx context.Context, ch <-chan Size) {
	for {
		select {
		case <-ctx.Done():
			return
		case sz, ok := <-ch:
			if !ok {
				return
			}
			m := &guestpb.ExecRequest{Msg: &guestpb.ExecRequest_Resize{Resize: &guestpb.Resize{
				Rows: uint32(sz.Rows), Cols: uint32(sz.Cols),
			}}}
			if s.send(m) != nil {
				return
			}
		}
	}
}

func (s *execSender) forwardSignals(ctx context.Context, ch <-chan syscall.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case sig, ok := <-ch:
			if !ok {
				return
			}
			if s.send(&guestpb.ExecRequest{Msg: &guestpb.ExecRequest_Signal{Signal: int32(sig)}}) != nil {
				return
			}
		}
	}
}
