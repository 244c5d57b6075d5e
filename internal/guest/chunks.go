package guest

import (
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// chunkWriter sends what is written to it as Chunk messages of at most
// guestproto.IOBufferSize bytes. Each Write sends at once; put a bufio.Writer in front to
// batch small writes.
type chunkWriter struct {
	send func(*guestpb.Chunk) error
}

// Write sends p.
func (w chunkWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := min(len(p), guestproto.IOBufferSize)
		if err := w.send(&guestpb.Chunk{Data: p[:c]}); err != nil {
			return n, err
		}
		n += c
		p = p[c:]
	}
	return n, nil
}

// chunkReader reads the data of a stream of messages, one message at a time.
type chunkReader struct {
	// next returns the next message's data, or io.EOF after the last.
	next func() ([]byte, error)
	buf  []byte
}

// Read reads from the current message, receiving the next one when it is used up.
func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		b, err := r.next()
		if err != nil {
			return 0, err
		}
		r.buf = b
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
