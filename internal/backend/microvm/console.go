package microvm

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/consolekeep"
)

// A QEMU VM's serial console is a socket QEMU listens on (consoleSocket), not a file it
// writes: while the daemon is connected, a console copy writes what arrives into
// consoleLog, cut back to its end past consoleMax; while no daemon is, QEMU drops what
// the VM writes. So nothing inside can fill the host's disk through its console,
// whether or not a daemon runs: an unprivileged process can make the VM's init write
// to it (by killing the guest, which init starts again, saying so), and root inside
// can write the serial port without end.
const consoleSocket = "console.sock"

// consoleCopy is a running copy of one VM's console into its file: the daemon's, from
// QEMU's socket, or a Firecracker VM's console-keep process (conn nil), which goes on
// without the daemon.
type consoleCopy struct {
	conn net.Conn      // nil for a Firecracker VM's
	done chan struct{} // closed when the copy has ended and the file is closed
}

// followConsole makes sure the console of the sandbox's QEMU VM is being copied into its
// file, starting a copy unless one runs. A QEMU started before its console was a socket
// writes its console file itself: that file is kept under consoleMax while ended is open
// (the session's life). A Firecracker VM's console needs none of this: its own reader
// keeps it bounded (firecrackerVMM.startConsoleKeep).
func (m *MicroVM) followConsole(id backend.ID, ended <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.consoles[id] != nil {
		return
	}
	dir := m.sandboxDir(id)
	path := filepath.Join(dir, consoleLog)
	conn, err := net.DialTimeout("unix", filepath.Join(dir, consoleSocket), 2*time.Second)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && ended != nil {
			go keepConsole(path, ended)
		}
		return
	}
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		conn.Close()
		m.log.Warn("the VM's console", "sandbox", id, "err", err)
		return
	}
	c := &consoleCopy{conn: conn, done: make(chan struct{})}
	m.consoles[id] = c
	go func() {
		defer close(c.done)
		copyConsole(file, path, conn, consoleMax)
		conn.Close()
		file.Close()
		m.mu.Lock()
		if m.consoles[id] == c {
			delete(m.consoles, id)
		}
		m.mu.Unlock()
	}()
}

// copyConsole appends what arrives on conn to file (at path, opened to append) until
// conn ends, cutting the file back to its last consoleTail bytes each time it grows past
// max.
func copyConsole(file *os.File, path string, conn io.Reader, max int64) {
	consolekeep.Copy(file, path, conn, max)
}

// consoleWritten waits, up to a second, for the copy of the sandbox's console to have
// written everything the VM's monitor sent before it ended, so that an error quoting
// the console's last lines reads them all.
func (m *MicroVM) consoleWritten(id backend.ID) {
	m.mu.Lock()
	c := m.consoles[id]
	m.mu.Unlock()
	if c == nil {
		return
	}
	select {
	case <-c.done:
	case <-time.After(time.Second):
	}
}

// stopConsoles ends every console copy: the daemon is going, and QEMU drops what its
// VMs write until the next one connects.
func (m *MicroVM) stopConsoles() {
	m.mu.Lock()
	copies := make([]*consoleCopy, 0, len(m.consoles))
	for _, c := range m.consoles {
		copies = append(copies, c)
	}
	m.mu.Unlock()
	for _, c := range copies {
		if c.conn != nil {
			c.conn.Close()
			<-c.done
		}
	}
}

// startConsoleKeep starts the reader of the VM's console: the guest binary's hidden
// `guest console-keep FILE MAX` on the host, reading a pipe that is to be Firecracker's
// standard output and error, and keeping consoleLog under consoleMax. It returns the
// pipe's write end; consoleWritten waits for the reader to have ended (the pipe's last
// writer gone and everything written in the file).
//
// Firecracker writes the guest's serial console (unless PUT /serial names a file) and
// its own log (unless PUT /logger names one) to its standard output: the serial device's
// writes (src/vmm/src/devices/legacy/serial.rs, SerialOut) are plain blocking writes
// from the vCPU's thread, so a full pipe holds the vCPU up until it is read. The reader
// therefore reads without pause, and drops what it cannot write. It is a process of its
// own, in a session of its own, so it reads for as long as the VM runs whether a daemon
// does or not: a guest with root can write its serial port without end, and the file
// stays bounded all the same; its end, which lastConsoleLines reads, is the VM's last
// words.
func (f *firecrackerVMM) startConsoleKeep(id backend.ID, md meta) (*os.File, error) {
	dir := f.m.sandboxDir(id)
	if md.GuestBinary == "" {
		return nil, fmt.Errorf("microvm: the sandbox has no guest binary to keep its console")
	}
	if md.GuestSHA256 != "" {
		// The binary runs on the host: the daemon's verified copy, checked again.
		if got, err := backend.FileSHA256(md.GuestBinary); err != nil || got != md.GuestSHA256 {
			return nil, fmt.Errorf("microvm: the guest binary %s does not have the sha256 %s (%v)", md.GuestBinary, md.GuestSHA256, err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	keeper := exec.Command(md.GuestBinary, "guest", "console-keep", filepath.Join(dir, consoleLog), strconv.Itoa(consoleMax))
	keeper.Stdin = r
	// It needs nothing of the daemon's environment.
	keeper.Env = []string{}
	// Not in the sandbox's directory, which Destroy removes; no terminal, no daemon.
	keeper.Dir = "/"
	keeper.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := keeper.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("microvm: start the VM's console reader: %w", err)
	}
	// consoleWritten waits for it while this daemon runs.
	c := &consoleCopy{done: make(chan struct{})}
	f.m.mu.Lock()
	f.m.consoles[id] = c
	f.m.mu.Unlock()
	go func() {
		keeper.Wait()
		close(c.done)
		f.m.mu.Lock()
		if f.m.consoles[id] == c {
			delete(f.m.consoles, id)
		}
		f.m.mu.Unlock()
	}()
	return w, nil
}

// writesConsoleFile says whether the sandbox's Firecracker writes its console file
// itself (its standard output is the file, not a pipe): one started before its console
// had a reader of its own, whose file the daemon keeps bounded while it holds a session.
func (f *firecrackerVMM) writesConsoleFile(id backend.ID) bool {
	pid := f.pid(id)
	if pid == 0 {
		return false
	}
	out, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", pid))
	return err == nil && filepath.Base(out) == consoleLog
}
