package guestclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
	"github.com/paddockhq/paddock/internal/limitbuf"
)

// Every Files call names a root (an absolute directory inside the sandbox, /workspace
// when empty) and a path: relative paths are taken beneath the root, absolute ones must
// lie beneath it. The guest never resolves a path outside the root, not through ".." and
// not through symlinks; such paths fail with an error matching ErrPathEscapes.

// ReadFile copies the file at path to w and returns the number of bytes written.
func (c *Client) ReadFile(ctx context.Context, root, path string, w io.Writer) (int64, error) {
	var fi *guestpb.FileInfo
	if c.hasFileStream() {
		fi, _ = c.Stat(ctx, root, path) // a failure is said again by the read
	}
	return c.readFile(ctx, root, path, w, fi)
}

// ReadFileMax reads the file at path into memory, up to max bytes: the sandbox chooses
// its files' sizes, and a sparse file of 64 GiB costs it nothing. A file larger than max
// is refused before any of it is read, and one that grows past max as it is read when it
// does, with an error that wraps *limitbuf.TooLargeError.
func (c *Client) ReadFileMax(ctx context.Context, root, path string, max int) ([]byte, error) {
	fi, err := c.Stat(ctx, root, path)
	if err != nil {
		return nil, err
	}
	if fi.GetSize() > int64(max) {
		return nil, &limitbuf.TooLargeError{Max: max}
	}
	buf := limitbuf.Buffer{Max: max}
	if _, err := c.readFile(ctx, root, path, &buf, fi); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readFile is ReadFile with what Stat said of path (nil: nothing). A large regular file
// goes through a file stream when the guest has them; anything else the old way, whose
// errors are the same.
func (c *Client) readFile(ctx context.Context, root, path string, w io.Writer, fi *guestpb.FileInfo) (int64, error) {
	if fi != nil && fi.GetType() == "file" && fi.GetSize() >= fileStreamThreshold && c.hasFileStream() {
		return c.streamReadFile(ctx, root, path, w)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.files.Read(ctx, &guestpb.PathRequest{Root: root, Path: path})
	if err != nil {
		return 0, translate(ctx, "read "+path, err)
	}
	return copyChunks(ctx, "read "+path, stream.Recv, w)
}

// copyChunks writes the data of every message recv returns to w, until io.EOF.
func copyChunks(ctx context.Context, op string, recv func() (*guestpb.Chunk, error), w io.Writer) (int64, error) {
	var n int64
	for {
		chunk, err := recv()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, translate(ctx, op, err)
		}
		m, err := w.Write(chunk.GetData())
		n += int64(m)
		if err != nil {
			return n, fmt.Errorf("%s: %w", op, err)
		}
	}
}

// WriteFile replaces the file at path with what r delivers, atomically: nothing changes
// at path unless all of r arrived and the call succeeds. mode is the new file's
// permission (0644 when zero); parents creates missing parent directories. It returns the
// number of bytes written.
func (c *Client) WriteFile(ctx context.Context, root, path string, mode fs.FileMode, parents bool, r io.Reader) (int64, error) {
	op := "write " + path
	if c.hasFileStream() {
		// A large file goes through a file stream. When r cannot tell its size, its
		// first fileStreamThreshold bytes decide.
		size := knownSize(r)
		if size >= fileStreamThreshold {
			return c.streamWriteFile(ctx, root, path, mode, parents, nil, r, size)
		}
		if size < 0 {
			var head bytes.Buffer
			_, err := io.CopyN(&head, r, fileStreamThreshold)
			switch {
			case err == nil:
				return c.streamWriteFile(ctx, root, path, mode, parents, head.Bytes(), r, -1)
			case errors.Is(err, io.EOF):
				r = &head
			default:
				return 0, fmt.Errorf("%s: %w", op, err)
			}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.files.Write(ctx)
	if err != nil {
		return 0, translate(ctx, op, err)
	}
	err = stream.Send(&guestpb.WriteRequest{Msg: &guestpb.WriteRequest_Header{Header: &guestpb.WriteHeader{
		Root: root, Path: path, Mode: guestproto.UnixMode(mode), Parents: parents,
	}}})
	if err == nil {
		err = sendChunks(r, func(b []byte) error {
			return stream.Send(&guestpb.WriteRequest{Msg: &guestpb.WriteRequest_Data{Data: b}})
		})
	}
	var inErr *inputError
	if errors.As(err, &inErr) {
		return 0, fmt.Errorf("%s: %w", op, inErr.err)
	}
	// A send fails with io.EOF when the guest has ended the call; its status follows.
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return 0, translate(ctx, op, err)
	}
	return resp.GetSize(), nil
}

// inputError is a failure to read the caller's input, as opposed to a failed send.
type inputError struct{ err error }

func (e *inputError) Error() string { return e.err.Error() }

// sendChunks sends what r delivers in chunks of up to guestproto.IOBufferSize bytes. It
// stops at the first failed send and returns its error; a read error comes as an
// *inputError.
func sendChunks(r io.Reader, send func([]byte) error) error {
	buf := make([]byte, guestproto.IOBufferSize)
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if serr := send(buf[:n]); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return &inputError{err: err}
		}
	}
}

// Stat describes path; a symlink is described itself, not followed.
func (c *Client) Stat(ctx context.Context, root, path string) (*guestpb.FileInfo, error) {
	fi, err := c.files.Stat(ctx, &guestpb.PathRequest{Root: root, Path: path})
	if err != nil {
		return nil, translate(ctx, "stat "+path, err)
	}
	return fi, nil
}

// List describes the entries of the directory at path, sorted by name. A path that is
// not a directory (a symlink included) lists as itself.
func (c *Client) List(ctx context.Context, root, path string) ([]*guestpb.FileInfo, error) {
	resp, err := c.files.List(ctx, &guestpb.PathRequest{Root: root, Path: path})
	if err != nil {
		return nil, translate(ctx, "list "+path, err)
	}
	return resp.GetEntries(), nil
}

// Remove removes path (a symlink itself, never its target); recursive removes a
// directory with everything beneath it, and then a missing path is not an error.
func (c *Client) Remove(ctx context.Context, root, path string, recursive bool) error {
	_, err := c.files.Remove(ctx, &guestpb.RemoveRequest{Root: root, Path: path, Recursive: recursive})
	return translate(ctx, "remove "+path, err)
}

// Mkdir creates the directory path with mode (0755 when zero); parents creates missing
// parents too, and then an existing directory is not an error.
func (c *Client) Mkdir(ctx context.Context, root, path string, mode fs.FileMode, parents bool) error {
	_, err := c.files.Mkdir(ctx, &guestpb.MkdirRequest{Root: root, Path: path, Mode: guestproto.UnixMode(mode), Parents: parents})
	return translate(ctx, "mkdir "+path, err)
}
