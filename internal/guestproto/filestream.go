package guestproto

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// StreamFiles is the Feature (and Hello.Stream) of the file stream: one whole-file write
// or read per connection, its bytes raw on the connection instead of in DRPC messages,
// so that the guest can splice them between the socket and the file.
//
// After the handshake the daemon sends one FileRequest (WriteMessage) and the guest
// answers with one FileStatus: an error ends the connection, Code 0 means ready.
//
// A write then carries the data as frames, each an 8-byte big-endian length and that many
// bytes, ended by a frame of length 0; the guest answers with a last FileStatus (Size is
// the number of bytes written) once the file is synced and renamed into place.
//
// A read's ready status carries the file's size in Size; exactly that many bytes follow,
// then a last FileStatus. A guest that cannot send them all (the file shrank) closes the
// connection, and the daemon reports a stream cut short.
const StreamFiles = "files"

// The operations of a FileRequest.
const (
	FileOpWrite = "write"
	FileOpRead  = "read"
)

// FileRequest asks for one file stream operation. Root and Path are resolved exactly as
// those of the Files service.
type FileRequest struct {
	Op   string `json:"op"`
	Root string `json:"root,omitempty"`
	Path string `json:"path"`
	// Mode is the new file's Unix mode bits (writes; 0644 when zero).
	Mode uint32 `json:"mode,omitempty"`
	// Parents creates missing parent directories (writes).
	Parents bool `json:"parents,omitempty"`
	// Size is the number of bytes the write will carry, or -1 when not known ahead.
	Size int64 `json:"size"`
}

// FileStatus is the guest's answer on a file stream. Code (a Code) and Message are those
// of the error the Files service would have answered with (0 is OK).
type FileStatus struct {
	Code    uint32 `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Size: see StreamFiles.
	Size int64 `json:"size"`
}

// maxMessage bounds a FileRequest or FileStatus, so that a peer cannot make the other
// side buffer without end.
const maxMessage = 64 << 10

// WriteMessage writes v as JSON after its 4-byte big-endian length.
func WriteMessage(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > maxMessage {
		return fmt.Errorf("file stream message of %d bytes is too long", len(b))
	}
	buf := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

// ReadMessage reads one message written by WriteMessage into v. It reads exactly the
// message's bytes, nothing after them.
func ReadMessage(r io.Reader, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return fmt.Errorf("read file stream message: %w", unexpectedEOF(err))
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxMessage {
		return fmt.Errorf("read file stream message: %d bytes is too long", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("read file stream message: %w", unexpectedEOF(err))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("read file stream message: %w", err)
	}
	return nil
}

// WriteFrameHeader starts a frame of n bytes (0 ends the data).
func WriteFrameHeader(w io.Writer, n int64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	_, err := w.Write(b[:])
	return err
}

// FrameHeader encodes the start of a frame of n bytes, for writing with its data at once.
func FrameHeader(n int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(n))
}

// ReadFrameHeader reads the length of the next frame; 0 ends the data.
func ReadFrameHeader(r io.Reader) (int64, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, fmt.Errorf("read frame: %w", unexpectedEOF(err))
	}
	n := binary.BigEndian.Uint64(b[:])
	if n > 1<<62 {
		return 0, fmt.Errorf("read frame: a length of %d bytes is not plausible", n)
	}
	return int64(n), nil
}

// ErrStreamCut is returned when a file stream ends before all that was announced arrived.
var ErrStreamCut = errors.New("file stream cut short")

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrStreamCut
	}
	return err
}
