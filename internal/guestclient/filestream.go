package guestclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"slices"
	"strings"

	"github.com/paddockhq/paddock/internal/guestproto"
)

// fileStreamThreshold is the size from which WriteFile and ReadFile use the guest's file
// stream (a connection of their own, the bytes raw on it) instead of gRPC messages on the
// shared session: below it, the new connection costs more than the framing saves.
const fileStreamThreshold = 1 << 20

// frameSize is the largest frame WriteFile sends when it does not know the size ahead.
const frameSize = 1 << 20

// Bridged is what a connection to a guest made through a command's streams says of
// itself: an exec through a container engine or Kubernetes' API server, or a command in
// an SSH session, bridging its stdin and stdout to the guest's socket. Each such
// connection takes tens of milliseconds to open, more than the file stream saves on all
// but huge files, and its throughput is the bridge's whatever the framing; so a client
// whose connections are bridged keeps large files on its shared session.
type Bridged interface {
	Bridged() bool
}

// hasFileStream reports whether large files take the file stream: the guest announced it
// (a guest from before it did not, and is answered the old way) and a connection of
// their own is cheap (not Bridged).
func (c *Client) hasFileStream() bool {
	return !c.bridged && c.peer.Protocol == guestproto.Protocol && slices.Contains(c.peer.Features, guestproto.StreamFiles)
}

// knownSize is how many bytes r will deliver, when it can tell without reading; -1
// otherwise.
func knownSize(r io.Reader) int64 {
	switch r := r.(type) {
	case *bytes.Reader:
		return int64(r.Len())
	case *strings.Reader:
		return int64(r.Len())
	}
	return -1
}

// openFileStream dials a connection of its own for req and waits for the guest's
// answer, an error or ready (whose Size, for a read, is the file's). The connection is
// closed when ctx is done; the caller closes it when done.
func (c *Client) openFileStream(ctx context.Context, op string, req guestproto.FileRequest) (net.Conn, guestproto.FileStatus, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, guestproto.FileStatus{}, fmt.Errorf("%s: dial the guest: %w", op, err)
	}
	_, err = guestproto.ClientHandshakeStream(conn, c.version, guestproto.StreamFiles)
	if err == nil {
		err = guestproto.WriteMessage(conn, req)
	}
	var st guestproto.FileStatus
	if err == nil {
		err = guestproto.ReadMessage(conn, &st)
	}
	if err == nil {
		err = statusError(op, st)
	}
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, st, fmt.Errorf("%s: %w", op, ctx.Err())
		}
		var gerr *Error
		if errors.As(err, &gerr) {
			return nil, st, err
		}
		return nil, st, fmt.Errorf("%s: %w", op, err)
	}
	return conn, st, nil
}

// statusError is the guest's failure in st, or nil when st says OK.
func statusError(op string, st guestproto.FileStatus) error {
	if st.Code == uint32(guestproto.OK) {
		return nil
	}
	return guestError(op, guestproto.Code(st.Code), st.Message)
}

// streamWriteFile is WriteFile through the file stream: head (already read from r), then
// the rest of r, size bytes of it when size is not -1.
func (c *Client) streamWriteFile(ctx context.Context, root, path string, mode fs.FileMode, parents bool, head []byte, r io.Reader, size int64) (int64, error) {
	op := "write " + path
	total := int64(-1)
	if size >= 0 {
		total = int64(len(head)) + size
	}
	conn, _, err := c.openFileStream(ctx, op, guestproto.FileRequest{
		Op: guestproto.FileOpWrite, Root: root, Path: path,
		Mode: guestproto.UnixMode(mode), Parents: parents, Size: total,
	})
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	sent, err := sendFrames(conn, head, r, size)
	var inErr *inputError
	if errors.As(err, &inErr) {
		// Without the end frame the guest removes what it received.
		return 0, fmt.Errorf("%s: %w", op, inErr.err)
	}
	sendErr := err
	var st guestproto.FileStatus
	if err := guestproto.ReadMessage(conn, &st); err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("%s: %w", op, ctx.Err())
		}
		if sendErr != nil {
			return 0, fmt.Errorf("%s: %w", op, sendErr)
		}
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	if err := statusError(op, st); err != nil {
		return 0, err
	}
	if sendErr != nil {
		return 0, fmt.Errorf("%s: %w", op, sendErr)
	}
	if st.Size != sent {
		return 0, fmt.Errorf("%s: the guest reports %d bytes written, %d were sent", op, st.Size, sent)
	}
	return sent, nil
}

// sendFrames sends head and r as frames, and the end frame: when size is known, r in
// one frame written at once, else in frames of up to frameSize bytes. A failure to read
// r comes as an *inputError, and then no end frame is sent.
func sendFrames(conn net.Conn, head []byte, r io.Reader, size int64) (int64, error) {
	var sent int64
	if len(head) > 0 {
		bufs := net.Buffers{guestproto.FrameHeader(int64(len(head))), head}
		if _, err := bufs.WriteTo(conn); err != nil {
			return sent, err
		}
		sent += int64(len(head))
	}
	if size > 0 {
		if _, err := conn.Write(guestproto.FrameHeader(size)); err != nil {
			return sent, err
		}
		// knownSize only knows readers whose WriteTo writes exactly what is left.
		n, err := r.(io.WriterTo).WriteTo(conn)
		sent += n
		if err != nil {
			return sent, err
		}
		if n != size {
			return sent, &inputError{err: fmt.Errorf("the input held %d bytes, not %d", n, size)}
		}
	} else if size < 0 {
		buf := make([]byte, frameSize)
		for {
			n, err := io.ReadFull(r, buf)
			if n > 0 {
				bufs := net.Buffers{guestproto.FrameHeader(int64(n)), buf[:n]}
				if _, werr := bufs.WriteTo(conn); werr != nil {
					return sent, werr
				}
				sent += int64(n)
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				break
			}
			if err != nil {
				return sent, &inputError{err: err}
			}
		}
	}
	_, err := conn.Write(guestproto.FrameHeader(0))
	return sent, err
}

// streamReadFile is ReadFile through the file stream. The guest's size and status are
// checked, not trusted: a stream that ends early, or a status that disagrees with what
// arrived, is an error.
func (c *Client) streamReadFile(ctx context.Context, root, path string, w io.Writer) (int64, error) {
	op := "read " + path
	conn, st, err := c.openFileStream(ctx, op, guestproto.FileRequest{Op: guestproto.FileOpRead, Root: root, Path: path})
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	size := st.Size
	if size < 0 {
		return 0, fmt.Errorf("%s: the guest announced a size of %d bytes", op, size)
	}
	n, err := copyExactly(w, conn, size)
	if err != nil {
		if ctx.Err() != nil {
			return n, fmt.Errorf("%s: %w", op, ctx.Err())
		}
		return n, fmt.Errorf("%s: %w", op, err)
	}
	var last guestproto.FileStatus
	if err := guestproto.ReadMessage(conn, &last); err != nil {
		if ctx.Err() != nil {
			return n, fmt.Errorf("%s: %w", op, ctx.Err())
		}
		return n, fmt.Errorf("%s: %w", op, err)
	}
	if err := statusError(op, last); err != nil {
		return n, err
	}
	if last.Size != n {
		return n, fmt.Errorf("%s: the guest reports %d bytes sent, %d arrived", op, last.Size, n)
	}
	return n, nil
}

// copyExactly copies size bytes from conn to w; fewer is guestproto.ErrStreamCut.
func copyExactly(w io.Writer, conn net.Conn, size int64) (int64, error) {
	buf := make([]byte, min(size, guestproto.IOBufferSize*4))
	var n int64
	for n < size {
		k, err := conn.Read(buf[:min(int64(len(buf)), size-n)])
		if k > 0 {
			m, werr := w.Write(buf[:k])
			n += int64(m)
			if werr != nil {
				return n, werr
			}
		}
		if errors.Is(err, io.EOF) {
			return n, fmt.Errorf("%w: %d of %d bytes arrived", guestproto.ErrStreamCut, n, size)
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
