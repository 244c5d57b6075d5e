// Package logfile is the background daemon's log: a file that rotates by size, keeping a
// few older ones beside it (daemon.log.1 the newest of them), so that whatever a sandbox
// makes the daemon log, its log takes a bounded amount of disk.
//
// It is not gopkg.in/natefinch/lumberjack.v2, which would otherwise do: a daemon started
// in the background also has its stdout and stderr in the log, so that a panic or a
// fatal runtime error is there to read, and those descriptors must follow the rotation
// (dup2 onto the new file) or they would keep writing into an old file, and then into a
// deleted one.
package logfile

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// The defaults of Options.
const (
	DefaultMaxBytes = 10 << 20
	DefaultKeep     = 3
)

// Options configures a File.
type Options struct {
	// MaxBytes is the size past which the file is rotated; 0 means DefaultMaxBytes.
	MaxBytes int64
	// Keep is how many rotated files are kept (PATH.1 to PATH.Keep); 0 means DefaultKeep.
	Keep int
	// Stdio makes the process's stdout and stderr the current file, now and at every
	// rotation, so that what the runtime writes there (a panic) is in the log too.
	Stdio bool
}

// File is a log file that rotates by size. It is safe for concurrent use.
type File struct {
	path string
	opts Options

	mu   sync.Mutex
	f    *os.File
	size int64 // bytes in the current file: its size at open plus what Write wrote
}

// Open opens (creating it, private to the user) the log file at path for appending.
func Open(path string, opts Options) (*File, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	l := &File{path: path, opts: opts}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *File) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open log: %w", err)
	}
	if l.opts.Stdio {
		for _, fd := range []int{1, 2} {
			if err := unix.Dup2(int(f.Fd()), fd); err != nil {
				f.Close()
				return fmt.Errorf("log stdout and stderr to %s: %w", l.path, err)
			}
		}
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Write appends p, first rotating the file when p would take it past MaxBytes. A write
// is never split across files. When rotating fails, writing goes on in the current file.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, os.ErrClosed
	}
	if l.size > 0 && l.size+int64(len(p)) > l.opts.MaxBytes {
		if err := l.rotate(); err != nil {
			// Keep logging where we can; try again after another MaxBytes.
			l.size = 0
			fmt.Fprintf(l.f, "paddock: cannot rotate the log %s: %v\n", l.path, err)
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

// rotate shifts PATH.N to PATH.N+1 (dropping the oldest), PATH to PATH.1, and opens a
// new PATH.
func (l *File) rotate() error {
	old := func(i int) string { return l.path + "." + strconv.Itoa(i) }
	if err := os.Remove(old(l.opts.Keep)); err != nil && !os.IsNotExist(err) {
		return err
	}
	for i := l.opts.Keep - 1; i >= 1; i-- {
		if err := os.Rename(old(i), old(i+1)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := os.Rename(l.path, old(1)); err != nil {
		return err
	}
	prev := l.f
	if err := l.open(); err != nil {
		// Undo, so that the log stays where readers look for it.
		os.Rename(old(1), l.path)
		return err
	}
	return prev.Close()
}

// Close closes the file. With Stdio, stdout and stderr still write to it.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
