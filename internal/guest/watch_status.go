package guest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// The status watcher learns of session status changes from the status files themselves.
//
// `paddock guest notify` (and paddock's own scripts, which write `starting` and `working`)
// write one file per session in the status directory; the guest watches that directory
// with inotify. This was preferred to notify connecting to a socket of the guest: every
// writer of the directory is seen without a second protocol, nothing is lost when the
// guest is not running or not yet subscribed (the file stays, and the daemon reads it on
// demand), and a hook never waits on the guest. Where inotify is unavailable the
// directory is polled instead.

// statusFileLimit bounds how much of a status file is read.
const statusFileLimit = 64 << 10

// statusRecord is a status file as `paddock guest notify` writes it.
type statusRecord struct {
	Status       string `json:"status"`
	AgentSession string `json:"agent_session,omitempty"`
	ExitStatus   string `json:"exit_status,omitempty"`
	Detail       string `json:"detail,omitempty"`
}

// watchStatus reports each status file written in dir until ctx is done.
func watchStatus(ctx context.Context, dir string, emit func(*guestpb.Event), log *slog.Logger) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Warn("events: status directory", "dir", dir, "err", err)
	}
	err := inotifyStatus(ctx, dir, emit)
	if err == nil || ctx.Err() != nil {
		return
	}
	log.Info("events: inotify unavailable, polling the status directory", "dir", dir, "err", err)
	pollStatus(ctx, dir, emit)
}

// inotifyStatus watches dir with inotify. It returns an error when inotify cannot be
// set up, and nil once ctx is done.
func inotifyStatus(ctx context.Context, dir string, emit func(*guestpb.Event)) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return err
	}
	// A non-blocking descriptor wrapped in a File is read through the runtime's poller,
	// so closing the File ends a pending Read.
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	// A file written in place is complete at IN_CLOSE_WRITE; notify writes a temporary
	// file and renames it over the old one (IN_MOVED_TO).
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return err
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : min(n, off+unix.SizeofInotifyEvent+int(ev.Len))]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			name := strings.TrimRight(string(nameBytes), "\x00")
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				continue // the kernel dropped events: nothing to name, the files stay
			}
			if ev.Mask&unix.IN_ISDIR == 0 {
				reportStatusFile(dir, name, emit)
			}
		}
	}
}

// pollStatus looks at dir every pollInterval and reports each status file that changed.
func pollStatus(ctx context.Context, dir string, emit func(*guestpb.Event)) {
	seen := map[string]time.Time{}
	first := true
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			if last, ok := seen[e.Name()]; !ok || !fi.ModTime().Equal(last) {
				seen[e.Name()] = fi.ModTime()
				if !first {
					reportStatusFile(dir, e.Name(), emit)
				}
			}
		}
		first = false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reportStatusFile reports the status file named name in dir, if it is one.
func reportStatusFile(dir, name string, emit func(*guestpb.Event)) {
	session, ok := strings.CutSuffix(name, ".json")
	if !ok || session == "" || strings.HasPrefix(name, ".") {
		return // notify's temporary files, and anything else
	}
	rec, err := readStatusFile(filepath.Join(dir, name))
	if err != nil || rec.Status == "" {
		return
	}
	if ev := statusEvent(session, rec); ev != nil {
		emit(ev)
	}
}

func readStatusFile(path string) (statusRecord, error) {
	var rec statusRecord
	data, err := readSmallFile(path, statusFileLimit)
	if err != nil {
		return rec, err
	}
	err = json.Unmarshal(data, &rec)
	return rec, err
}

// readSmallFile reads up to limit bytes of a regular file, never following a final
// symlink nor waiting on a FIFO planted in its place.
func readSmallFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// statusEvent turns a status record into its event: session-exited for a process that
// ended, session-status for the rest.
func statusEvent(session string, rec statusRecord) *guestpb.Event {
	attrs := map[string]string{"session": session}
	if rec.Detail != "" {
		attrs["detail"] = rec.Detail
	}
	if rec.Status == "exited" {
		if rec.ExitStatus != "" {
			attrs["exit_status"] = rec.ExitStatus
			if _, ok := attrs["detail"]; !ok {
				attrs["detail"] = "exit status " + rec.ExitStatus
			}
		}
		return newEvent(guestproto.EventSessionExited, attrs)
	}
	attrs["status"] = rec.Status
	if rec.AgentSession != "" {
		attrs["agent_session"] = rec.AgentSession
	}
	return newEvent(guestproto.EventSessionStatus, attrs)
}
