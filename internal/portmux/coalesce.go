package portmux

import (
	"io"
	"sync"
)

// coalescer gathers writes made while the one before is still being written into one
// write: yamux writes a frame's header and body apart, and every write to a console
// port is a buffer the guest's kernel hands to the monitor and the monitor to its
// socket, at a price per write (much more under emulation).
type coalescer struct {
	w io.Writer

	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	err    error
	closed bool
	done   chan struct{} // closed when loop has returned
}

// maxPending is how much a coalescer holds before Write waits.
const maxPending = 1 << 20

func newCoalescer(w io.Writer) *coalescer {
	c := &coalescer{w: w, done: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	go c.loop()
	return c
}

func (c *coalescer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.buf) >= maxPending && c.err == nil && !c.closed {
		c.cond.Wait()
	}
	if c.err != nil {
		return 0, c.err
	}
	if c.closed {
		return 0, io.ErrClosedPipe
	}
	c.buf = append(c.buf, p...)
	c.cond.Broadcast()
	return len(p), nil
}

// Close drops what is held, its session being over, and returns once the write under
// way has ended: a port's next session must not find the old one's bytes after its
// own start.
func (c *coalescer) Close() error {
	c.mu.Lock()
	c.closed = true
	c.buf = nil
	c.cond.Broadcast()
	c.mu.Unlock()
	<-c.done
	return nil
}

func (c *coalescer) loop() {
	defer close(c.done)
	var out []byte
	for {
		c.mu.Lock()
		for len(c.buf) == 0 && !c.closed {
			c.cond.Wait()
		}
		if len(c.buf) == 0 {
			c.mu.Unlock()
			return
		}
		out, c.buf = c.buf, out[:0]
		c.cond.Broadcast()
		c.mu.Unlock()
		if _, err := c.w.Write(out); err != nil {
			c.mu.Lock()
			c.err = err
			c.cond.Broadcast()
			c.mu.Unlock()
			return
		}
	}
}
