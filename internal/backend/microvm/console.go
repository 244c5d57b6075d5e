package microvm

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
)

// A QEMU VM's serial console is a socket QEMU listens on (consoleSocket), not a file it
// writes: while the daemon is connected, a console copy writes what arrives into
// consoleLog, cut back to its end past consoleMax; while no daemon is, QEMU drops what
// the VM writes. So nothing inside can fill the host's disk through its console,
// whether or not a daemon runs: an unprivileged process can make the VM's init write
// to it (by killing the guest, which init starts again, saying so), and root inside
// can write the serial port without end.
const consoleSocket = "console.sock"

// consoleCopy is a running copy of one VM's console into its file.
type consoleCopy struct {
	conn net.Conn
	done chan struct{} // closed when the copy has ended and the file is closed
}

// followConsole makes sure the console of the sandbox's QEMU VM is being copied into its
// file, starting a copy unless one runs. A VM whose monitor writes its console file
// itself (Firecracker, or QEMU started before its console was a socket) has no socket:
// its file is kept under consoleMax while ended is open (the session's life).
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
	size := int64(0)
	if fi, err := file.Stat(); err == nil {
		size = fi.Size()
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			if _, werr := file.Write(buf[:n]); werr != nil {
				return
			}
			if size += int64(n); size > max {
				trimConsole(path, max)
				if fi, err := file.Stat(); err == nil {
					size = fi.Size()
				}
			}
		}
		if err != nil {
			return
		}
	}
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
		c.conn.Close()
		<-c.done
	}
}
