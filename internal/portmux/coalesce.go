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

	mu      sync.Mutex
	cond    *sync.Cond
	buf     []byte
	err     error
	closed  bool
	writing bool
}

// maxPending is how much a coalescer holds before Write waits.
const maxPending = 1 << 20

func newCoalescer(w io.Writer) *coalescer {
	c := &coalescer{w: w}
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

// Close ends the loop once what is held has been written.
func (c *coalescer) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.cond.Broadcast()
	return nil
}

func (c *coalescer) loop() {
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
