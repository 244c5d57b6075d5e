package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/guestproto"
)

// features are the stream kinds the guest serves besides the yamux session.
var features = []string{guestproto.StreamFiles}

// serveFileStream serves one guestproto.StreamFiles operation on conn: a whole file
// written or read, its bytes copied between conn and the file without gRPC framing (by
// splice where the kernel allows). Paths are resolved, and files created, exactly as by
// the Files service.
func (s *Server) serveFileStream(ctx context.Context, conn net.Conn) error {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	var req guestproto.FileRequest
	if err := guestproto.ReadMessage(conn, &req); err != nil {
		return fmt.Errorf("file stream: %w", err)
	}
	switch req.Op {
	case guestproto.FileOpWrite:
		return s.streamWrite(ctx, conn, req)
	case guestproto.FileOpRead:
		return s.streamRead(conn, req)
	}
	err := guestproto.Errorf(guestproto.InvalidArgument, "file stream: unknown operation %q", req.Op)
	return errors.Join(err, sendStatus(conn, err, 0))
}

// streamWrite receives the frames of a write into a temporary file and renames it into
// place once all of them (and the end frame) arrived.
func (s *Server) streamWrite(ctx context.Context, conn net.Conn, req guestproto.FileRequest) error {
	w, err := startWrite(req.Root, req.Path, req.Parents)
	if err != nil {
		return errors.Join(err, sendStatus(conn, err, 0))
	}
	defer w.abort()
	if err := sendStatus(conn, nil, 0); err != nil {
		return err
	}
	var size int64
	for {
		n, err := guestproto.ReadFrameHeader(conn)
		if err != nil {
			return fmt.Errorf("file stream: write %s: %w", req.Path, err)
		}
		if n == 0 {
			break
		}
		m, err := w.receive(conn, size, n)
		size += m
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("file stream: write %s: %w", req.Path, guestproto.ErrStreamCut)
			}
			// A failed read of the socket and a failed write of the file look alike
			// here; the daemon learns which from the status, if it can still read it.
			err = w.rp.error("write", w.rp.rel, err)
			return errors.Join(err, sendStatus(conn, err, size))
		}
	}
	if err := w.commit(ctx, guestproto.FileMode(req.Mode, defaultFileMode)); err != nil {
		return errors.Join(err, sendStatus(conn, err, size))
	}
	s.ownWrite(w.rp.full(w.rp.rel))
	return sendStatus(conn, nil, size)
}

// writebackChunk is how much of a file stream's data is written before the kernel is
// asked to start writing it back, so that the fsync at the end waits for less.
const writebackChunk = 8 << 20

// receive copies n bytes from conn into the temporary file, which holds off bytes so
// far. The file is an *os.File and conn a socket: io.CopyN splices. After each
// writebackChunk the kernel starts writing back what arrived (without waiting for it),
// so that the disk works while the rest arrives.
func (w *fileWrite) receive(conn net.Conn, off, n int64) (int64, error) {
	raw, err := w.file.SyscallConn()
	if err != nil {
		return 0, err
	}
	var done int64
	for done < n {
		k := min(n-done, writebackChunk)
		m, err := io.CopyN(w.file, conn, k)
		if m > 0 {
			start := off + done
			_ = raw.Control(func(fd uintptr) {
				_ = unix.SyncFileRange(int(fd), start, m, unix.SYNC_FILE_RANGE_WRITE)
			})
		}
		done += m
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// streamRead sends the file's size, then that many bytes, then the last status. When
// the file no longer has that many bytes, it ends the connection without a last status.
func (s *Server) streamRead(conn net.Conn, req guestproto.FileRequest) error {
	rp, file, fi, err := openRead(req.Root, req.Path)
	if err != nil {
		return errors.Join(err, sendStatus(conn, err, 0))
	}
	defer rp.close()
	defer file.Close()
	size := fi.Size()
	if err := sendStatus(conn, nil, size); err != nil {
		return err
	}
	buf := make([]byte, guestproto.IOBufferSize)
	n, err := io.CopyBuffer(conn, io.LimitReader(file, size), buf)
	if err == nil && n < size {
		err = fmt.Errorf("file stream: read %s: the file shrank from %d to %d bytes while it was read", rp.full(rp.rel), size, n)
	}
	if err != nil {
		return err // conn is closed on return: the daemon sees the stream cut short
	}
	return sendStatus(conn, nil, n)
}

// sendStatus answers with err (nil for OK) as a guestproto.FileStatus.
func sendStatus(conn net.Conn, err error, size int64) error {
	st := guestproto.FileStatus{Size: size}
	if err != nil {
		st.Code, st.Message = uint32(guestproto.CodeOf(err)), err.Error()
	}
	if err := guestproto.WriteMessage(conn, st); err != nil {
		return fmt.Errorf("file stream: send status: %w", err)
	}
	return nil
}
