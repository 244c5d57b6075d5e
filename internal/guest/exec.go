package guest

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

const (
	// outputBufferSize is the read size for process output.
	outputBufferSize = 32 << 10
	// outputGrace is how long output is still read after the process has exited, when
	// something it left running keeps its stdout or stderr open.
	outputGrace = time.Second
	// outputDrainMax bounds what is still sent of a process's output once the grace
	// has passed: what its pipe held then.
	outputDrainMax = 4 << 20
	// startFailedCode is the exit code reported for a process that could not start.
	startFailedCode = 127
)

type execService struct {
	s *Server
}

// Run starts one process and streams its input and output: started_pid first, then
// output in order, then exit, once, after all output.
func (e execService) Run(stream guestpb.DRPCExec_RunStream) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return guestproto.Errorf(guestproto.InvalidArgument, "exec: the first request must carry start")
	}
	e.s.poke() // a command may open a port or make a commit: look soon
	p, err := startProcess(start)
	if err != nil {
		e.s.log.Debug("exec: start failed", "argv", start.GetArgv(), "err", err)
		return stream.Send(&guestpb.ExecResponse{Msg: &guestpb.ExecResponse_Exit{
			Exit: &guestpb.ExecExit{Code: startFailedCode, Error: err.Error()},
		}})
	}
	defer p.close()
	// The client went away: nobody will read the output or send input again.
	stopKill := context.AfterFunc(ctx, func() { _ = p.signal(syscall.SIGKILL) })
	defer stopKill()

	var sendMu sync.Mutex
	send := func(m *guestpb.ExecResponse) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	_ = send(&guestpb.ExecResponse{Msg: &guestpb.ExecResponse_StartedPid{StartedPid: int32(p.pid)}})

	var outputs sync.WaitGroup
	for _, o := range p.outputs {
		outputs.Go(func() { pumpOutput(o, send) })
	}
	done := make(chan struct{})
	defer close(done)
	go e.input(stream, p, done)

	if err := p.waitExited(); err != nil {
		e.s.log.Warn("exec: wait", "pid", p.pid, "err", err)
	}
	drained := make(chan struct{})
	go func() {
		outputs.Wait()
		close(drained)
	}()
	grace := time.NewTimer(outputGrace)
	select {
	case <-drained:
	case <-grace.C:
	case <-ctx.Done():
	}
	grace.Stop()
	for _, o := range p.outputs {
		_ = o.f.SetReadDeadline(time.Now())
	}
	<-drained
	exit := p.reap()
	if err := ctx.Err(); err != nil {
		return err
	}
	return send(&guestpb.ExecResponse{Msg: &guestpb.ExecResponse_Exit{Exit: exit}})
}

// pumpOutput sends what o produces until EOF (EIO for a tty whose slave side is closed)
// or a deadline. At the deadline, what the pipe already holds is sent still: the output
// of a process that has exited is never dropped, whether something it left running
// keeps the pipe open or the guest, loaded, came to read it late.
func pumpOutput(o output, send func(*guestpb.ExecResponse) error) {
	buf := make([]byte, outputBufferSize)
	sendChunk := func(b []byte) bool {
		m := &guestpb.ExecResponse{Msg: &guestpb.ExecResponse_Stdout{Stdout: b}}
		if o.stderr {
			m.Msg = &guestpb.ExecResponse_Stderr{Stderr: b}
		}
		return send(m) == nil
	}
	for {
		n, err := o.f.Read(buf)
		if n > 0 && !sendChunk(buf[:n]) {
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			drainBuffered(o.f, buf, sendChunk)
			return
		}
		if err != nil {
			return
		}
	}
}

// drainBuffered sends what f (non-blocking) holds now, without waiting for more, and at
// most outputDrainMax bytes: a process left running may write without end.
func drainBuffered(f *os.File, buf []byte, sendChunk func([]byte) bool) {
	sc, err := f.SyscallConn()
	if err != nil {
		return
	}
	for sent := 0; sent < outputDrainMax; {
		var n int
		var rerr error
		// Control, not Read: a read past the deadline fails before it reads.
		if sc.Control(func(fd uintptr) { n, rerr = unix.Read(int(fd), buf) }) != nil || rerr != nil || n <= 0 {
			return // EAGAIN (nothing more now), EOF, EIO
		}
		if !sendChunk(buf[:n]) {
			return
		}
		sent += n
	}
}

// input applies the client's requests to p until the client stops sending or done is
// closed: stdin data, close_stdin, resize and signals.
func (e execService) input(stream guestpb.DRPCExec_RunStream, p *process, done <-chan struct{}) {
	in := make(chan []byte, 16)
	defer close(in)
	w := p.stdin
	if p.tty != nil {
		w = p.tty
	}
	var raise func([]byte)
	if p.tty != nil {
		raise = ttySignaller{tty: p.tty, leader: p.pid}.wrote
	}
	go writeInput(w, p.tty == nil, in, raise)
	closed := false
	closeStdin := func() {
		if !closed && p.tty == nil {
			closed = true
			select {
			case in <- nil:
			case <-done:
			}
		}
	}
	for {
		req, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				closeStdin()
			}
			return
		}
		switch m := req.GetMsg().(type) {
		case *guestpb.ExecRequest_Stdin:
			if closed || len(m.Stdin) == 0 {
				continue
			}
			select {
			case in <- m.Stdin:
			case <-done:
				return
			}
		case *guestpb.ExecRequest_CloseStdin:
			if m.CloseStdin {
				closeStdin()
			}
		case *guestpb.ExecRequest_Resize:
			if p.tty != nil {
				if err := setWinsize(p.tty, m.Resize.GetRows(), m.Resize.GetCols()); err != nil {
					e.s.log.Debug("exec: resize", "pid", p.pid, "err", err)
				}
			}
		case *guestpb.ExecRequest_Signal:
			if err := p.signal(syscall.Signal(m.Signal)); err != nil {
				e.s.log.Debug("exec: signal", "pid", p.pid, "err", err)
			}
		}
	}
}

// writeInput writes every chunk from in to w. A nil chunk closes w when closeOnNil is
// set (a pipe); a write error makes it discard the rest. raise, when set, is given each
// chunk written (a terminal's special characters).
func writeInput(w *os.File, closeOnNil bool, in <-chan []byte, raise func([]byte)) {
	failed := false
	for b := range in {
		switch {
		case failed:
		case b == nil:
			if closeOnNil {
				w.Close()
				failed = true
			}
		default:
			if _, err := w.Write(b); err != nil {
				failed = true
			} else if raise != nil {
				raise(b)
			}
		}
	}
}
