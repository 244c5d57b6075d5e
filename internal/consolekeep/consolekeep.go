// Package consolekeep keeps a VM's console file bounded: what the VM's monitor writes is
// appended to the file, which is cut back to its end each time it grows past a bound. The
// daemon uses it for a QEMU VM's console socket; the guest binary's hidden command
// `guest console-keep FILE MAX` uses it on the host for Firecracker, whose console is a
// pipe it reads for as long as the VM runs, daemon or not.
package consolekeep

import (
	"fmt"
	"io"
	"os"
)

// Tail is how much of its end a console file keeps when it is cut back: what its last
// lines are read from.
const Tail = 64 << 10

// Copy appends what arrives on r to file (at path, opened to append) until r ends,
// cutting the file back to its last Tail bytes each time it grows past max. It reads
// without pause, so a monitor writing to r is never held up by it.
func Copy(file *os.File, path string, r io.Reader, max int64) {
	size := int64(0)
	if fi, err := file.Stat(); err == nil {
		size = fi.Size()
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := file.Write(buf[:n]); werr != nil {
				// The file cannot be written (a full disk): what arrives is dropped,
				// as the monitor must not be held up.
				io.Copy(io.Discard, r)
				return
			}
			if size += int64(n); size > max {
				Trim(path, max)
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

// Trim cuts the console file at path back to its last Tail bytes when it is larger
// than max. Writers append to it, so what they write meanwhile lands after.
func Trim(path string, max int64) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() <= max {
		return err
	}
	end, err := readEnd(path, Tail)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return err
	}
	_, err = f.Write(end)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readEnd is the last n bytes of the file at path.
func readEnd(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.NewSectionReader(f, max(fi.Size()-n, 0), n))
}

// Keep copies in into the console file at path (created, or appended to), kept under
// max bytes, until in ends. A file it cannot open has in drained all the same: the
// monitor writing the other end must not be held up.
func Keep(path string, max int64, in io.Reader) error {
	if max < Tail {
		return fmt.Errorf("console-keep: a bound of %d bytes is under the %d kept when the file is cut back", max, Tail)
	}
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		io.Copy(io.Discard, in)
		return fmt.Errorf("console-keep: %w", err)
	}
	defer file.Close()
	Copy(file, path, in, max)
	return nil
}
