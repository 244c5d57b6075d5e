package guest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
	"github.com/paddockhq/paddock/internal/inside"
)

// defaultDir is the working directory of a process started without one.
const defaultDir = inside.Workspace

// process is one started command: its output files, its input and its process group.
type process struct {
	cmd *exec.Cmd
	pid int
	// tty is the pseudo-terminal's master, nil when the process has pipes.
	tty *os.File
	// stdin is the write end of the process's stdin pipe, nil with a tty.
	stdin *os.File
	// outputs are read until EOF: the tty master, or the stdout and stderr pipes.
	outputs []output

	mu     sync.Mutex
	reaped bool
}

// output is one stream of a process's output.
type output struct {
	f      *os.File
	stderr bool
}

// startProcess starts the process described by start. Every error means the process did
// not start.
func startProcess(start *guestpb.ExecStart) (*process, error) {
	argv := start.GetArgv()
	if len(argv) == 0 {
		return nil, errors.New("exec: empty argv")
	}
	env := append(os.Environ(), start.GetEnv()...)
	dir := start.GetDir()
	if dir == "" {
		dir = defaultDir
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			dir = "/"
		}
	}
	path, err := lookPath(argv[0], lastEnv(env, "PATH"))
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: dir}
	if start.GetTty() {
		return startTTY(cmd, start.GetRows(), start.GetCols())
	}
	return startPipes(cmd)
}

// startPipes starts cmd with a pipe for each standard stream, in a process group of its
// own so that signals reach its children too.
func startPipes(cmd *exec.Cmd) (p *process, err error) {
	var closers []*os.File
	defer func() {
		if err != nil {
			for _, f := range closers {
				f.Close()
			}
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			closers = append(closers, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("exec: stdin pipe: %w", err)
	}
	outR, outW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("exec: stdout pipe: %w", err)
	}
	errR, errW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("exec: stderr pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	inR.Close()
	outW.Close()
	errW.Close()
	return &process{
		cmd:     cmd,
		pid:     cmd.Process.Pid,
		stdin:   inW,
		outputs: []output{{f: outR}, {f: errR, stderr: true}},
	}, nil
}

// startTTY starts cmd on a new pseudo-terminal as the leader of a new session, whose
// controlling terminal it is.
func startTTY(cmd *exec.Cmd, rows, cols uint32) (*process, error) {
	master, slave, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("exec: open pty: %w", err)
	}
	defer slave.Close()
	// pty.Open leaves the master in blocking mode; a non-blocking duplicate lets reads
	// be interrupted (deadlines) and closed while pending.
	tty, err := nonBlockingDup(master)
	master.Close()
	if err != nil {
		return nil, fmt.Errorf("exec: pty: %w", err)
	}
	if rows == 0 || cols == 0 {
		rows, cols = 24, 80
	}
	if err := setWinsize(tty, rows, cols); err != nil {
		tty.Close()
		return nil, fmt.Errorf("exec: pty size: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		tty.Close()
		return nil, err
	}
	go kernelSignalsTTY() // known before a special character is typed (ttysig.go)
	return &process{
		cmd:     cmd,
		pid:     cmd.Process.Pid,
		tty:     tty,
		outputs: []output{{f: tty}},
	}, nil
}

// nonBlockingDup returns a pollable duplicate of f.
func nonBlockingDup(f *os.File) (*os.File, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var fd int
	var dupErr error
	if err := sc.Control(func(orig uintptr) {
		fd, dupErr = unix.FcntlInt(orig, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, fmt.Errorf("dup: %w", dupErr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// setWinsize sets the terminal size of a pty master. It goes through the raw fd rather
// than pty.Setsize, which would put the master back into blocking mode.
func setWinsize(tty *os.File, rows, cols uint32) error {
	sc, err := tty.SyscallConn()
	if err != nil {
		return err
	}
	ws := &unix.Winsize{Row: uint16(rows), Col: uint16(cols)}
	var ioErr error
	if err := sc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws)
	}); err != nil {
		return err
	}
	return ioErr
}

// signal delivers sig to the process's group (for a tty, the group of the session
// leader). It does nothing once the process has been reaped, when its pid may belong to
// another process.
func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return nil
	}
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", p.pid, err)
	}
	return nil
}

// waitExited blocks until the process has exited, without reaping it: while it is a
// zombie its pid, and so its process group id, cannot be reused.
func (p *process) waitExited() error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// reap collects the exited process and returns its exit.
func (p *process) reap() *guestpb.ExecExit {
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
	err := p.cmd.Wait()
	st := p.cmd.ProcessState
	if st == nil {
		return &guestpb.ExecExit{Code: 127, Error: fmt.Sprintf("wait: %v", err)}
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &guestpb.ExecExit{Code: 128 + int32(ws.Signal()), Signal: int32(ws.Signal())}
	}
	return &guestpb.ExecExit{Code: int32(st.ExitCode())}
}

// close releases the process's files.
func (p *process) close() {
	if p.stdin != nil {
		p.stdin.Close()
	}
	for _, o := range p.outputs {
		o.f.Close()
	}
}

// lookPath finds file like exec.LookPath, but in the PATH the process will get rather
// than the guest's own.
func lookPath(file, path string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
}

// lastEnv returns the value of the last key=value entry of env for key.
func lastEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}
