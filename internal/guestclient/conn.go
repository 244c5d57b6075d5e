package guestclient

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

const (
	// tunnelBufferSize is the largest data message a tunnel sends.
	tunnelBufferSize = 32 << 10
	// lingerTimeout bounds how long a closed tunnel connection waits for the guest to
	// end the call before it is cancelled.
	lingerTimeout = 5 * time.Second
)

// tunnelStream is the client side of Tunnels.Forward and Tunnels.Accept.
type tunnelStream interface {
	Send(*guestpb.TunnelData) error
	Recv() (*guestpb.TunnelData, error)
	CloseSend() error
}

// tunnelConn is a net.Conn carried by a Forward or Accept call. CloseWrite half-closes
// it. Read deadlines are exact; a write deadline is checked before each message, so a
// write blocked by a peer that does not read is ended by Close, not by the deadline.
type tunnelConn struct {
	stream tunnelStream
	cancel context.CancelFunc
	local  tunnelAddr
	remote tunnelAddr

	// recv delivers the data the guest sends; it is closed at the guest's close_write or
	// at the end of the call, after recvErr is set.
	recv    chan []byte
	recvErr error
	readMu  sync.Mutex
	pending []byte

	sendMu      sync.Mutex
	writeClosed bool

	readDeadline, writeDeadline *deadline
	closeOnce                   sync.Once
	closed                      chan struct{}
	// ended is closed when the call has ended.
	ended chan struct{}
}

var _ net.Conn = (*tunnelConn)(nil)

// newTunnelConn starts reading stream. cancel ends the call.
func newTunnelConn(stream tunnelStream, cancel context.CancelFunc, remote string) *tunnelConn {
	c := &tunnelConn{
		stream:        stream,
		cancel:        cancel,
		local:         tunnelAddr("daemon"),
		remote:        tunnelAddr(remote),
		recv:          make(chan []byte, 4),
		readDeadline:  newDeadline(),
		writeDeadline: newDeadline(),
		closed:        make(chan struct{}),
		ended:         make(chan struct{}),
	}
	go c.receive()
	return c
}

func (c *tunnelConn) receive() {
	defer close(c.ended)
	delivering := true
	stopDelivering := func(err error) {
		if delivering {
			delivering = false
			c.recvErr = err
			close(c.recv)
		}
	}
	// Receive until the call ends, so that its end is noticed; after the guest's
	// close_write or after Close, what arrives is dropped.
	for {
		m, err := c.stream.Recv()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				err = translate(context.Background(), "tunnel "+string(c.remote), err)
			}
			stopDelivering(err)
			return
		}
		if !delivering {
			continue
		}
		switch msg := m.GetMsg().(type) {
		case *guestpb.TunnelData_Data:
			select {
			case c.recv <- msg.Data:
			case <-c.closed:
				stopDelivering(net.ErrClosed)
			}
		case *guestpb.TunnelData_CloseWrite:
			if msg.CloseWrite {
				stopDelivering(io.EOF)
			}
		}
	}
}

// Read reads data the guest's side sent.
func (c *tunnelConn) Read(p []byte) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if len(c.pending) == 0 {
		select {
		case <-c.closed:
			return 0, net.ErrClosed
		default:
		}
		select {
		case b, ok := <-c.recv:
			if !ok {
				return 0, c.recvErr
			}
			c.pending = b
		case <-c.closed:
			return 0, net.ErrClosed
		case <-c.readDeadline.wait():
			return 0, os.ErrDeadlineExceeded
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// Write sends p to the guest's side.
func (c *tunnelConn) Write(p []byte) (int, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	n := 0
	for len(p) > 0 {
		select {
		case <-c.closed:
			return n, net.ErrClosed
		case <-c.writeDeadline.wait():
			return n, os.ErrDeadlineExceeded
		default:
		}
		if c.writeClosed {
			return n, errors.New("tunnel: write after CloseWrite")
		}
		k := min(len(p), tunnelBufferSize)
		if err := c.stream.Send(&guestpb.TunnelData{Msg: &guestpb.TunnelData_Data{Data: p[:k]}}); err != nil {
			return n, c.sendError(err)
		}
		n += k
		p = p[k:]
	}
	return n, nil
}

// sendError explains a failed send.
func (c *tunnelConn) sendError(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrClosedPipe // the guest ended the call; Read reports why
	}
	return translate(context.Background(), "tunnel "+string(c.remote), err)
}

// CloseWrite tells the guest's side that no more data will come (a TCP half-close).
func (c *tunnelConn) CloseWrite() error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if c.writeClosed {
		return nil
	}
	c.writeClosed = true
	if err := c.stream.Send(&guestpb.TunnelData{Msg: &guestpb.TunnelData_CloseWrite{CloseWrite: true}}); err != nil {
		return c.sendError(err)
	}
	return c.stream.CloseSend()
}

// Close closes the connection: Read and Write fail from now on, data already written is
// still delivered (see linger).
func (c *tunnelConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		go c.linger()
	})
	return nil
}

// linger ends the call like a TCP close: it half-closes, so that everything written so
// far reaches the guest's side, and waits (up to lingerTimeout) for the guest to end the
// call before cancelling it. Cancelling at once could make the guest drop data it has
// received but not yet written.
func (c *tunnelConn) linger() {
	t := time.AfterFunc(lingerTimeout, c.cancel)
	defer t.Stop()
	if c.CloseWrite() == nil {
		<-c.ended
	}
	c.cancel()
}

// LocalAddr names the daemon's end.
func (c *tunnelConn) LocalAddr() net.Addr { return c.local }

// RemoteAddr names the sandbox's end.
func (c *tunnelConn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets both deadlines.
func (c *tunnelConn) SetDeadline(t time.Time) error {
	c.readDeadline.set(t)
	c.writeDeadline.set(t)
	return nil
}

// SetReadDeadline bounds pending and future Reads.
func (c *tunnelConn) SetReadDeadline(t time.Time) error {
	c.readDeadline.set(t)
	return nil
}

// SetWriteDeadline bounds future Writes (checked before each message).
func (c *tunnelConn) SetWriteDeadline(t time.Time) error {
	c.writeDeadline.set(t)
	return nil
}

// tunnelAddr names one end of a tunnel.
type tunnelAddr string

// Network names the transport.
func (a tunnelAddr) Network() string { return "paddock-guest" }

// String names the end.
func (a tunnelAddr) String() string { return string(a) }

// deadline is a settable point in time whose wait channel is closed once it has passed.
type deadline struct {
	mu    sync.Mutex
	timer *time.Timer
	ch    chan struct{}
}

func newDeadline() *deadline {
	return &deadline{ch: make(chan struct{})}
}

// set moves the deadline to t; the zero time means none.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.ch // the timer fired; wait until it has closed the channel
	}
	d.timer = nil
	closed := false
	select {
	case <-d.ch:
		closed = true
	default:
	}
	if t.IsZero() {
		if closed {
			d.ch = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if closed {
			d.ch = make(chan struct{})
		}
		ch := d.ch
		d.timer = time.AfterFunc(dur, func() { close(ch) })
		return
	}
	if !closed {
		close(d.ch)
	}
}

// wait returns a channel that is closed when the deadline passes.
func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch
}
