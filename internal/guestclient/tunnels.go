package guestclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// Forward connects to 127.0.0.1:port inside the sandbox and returns the connection. It
// fails (an *Error with code Unavailable) when nothing listens there. ctx bounds the
// connection's setup only; Close ends it. The connection also has CloseWrite() error,
// a TCP half-close.
func (c *Client) Forward(ctx context.Context, port uint32) (net.Conn, error) {
	op := fmt.Sprintf("forward to sandbox port %d", port)
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	stream, err := c.tunnels.Forward(callCtx)
	if err == nil {
		err = stream.Send(&guestpb.TunnelData{Msg: &guestpb.TunnelData_Open{Open: &guestpb.TunnelOpen{Port: port}}})
		if err == nil || errors.Is(err, io.EOF) {
			err = awaitUp(stream)
		}
	}
	if !stop() {
		cancel()
		return nil, fmt.Errorf("%s: %w", op, ctx.Err())
	}
	if err != nil {
		cancel()
		return nil, translate(ctx, op, err)
	}
	return newTunnelConn(stream, cancel, fmt.Sprintf("127.0.0.1:%d", port)), nil
}

// awaitUp waits for the guest's first message, which Forward and Accept send once the
// connection is up, and returns the call's error when it ended instead.
func awaitUp(stream tunnelStream) error {
	m, err := stream.Recv()
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("the guest ended the call")
	case err != nil:
		return err
	case !m.GetUp():
		return errors.New("the guest's first message did not say the connection is up")
	}
	return nil
}

// ReverseTunnel is a listener inside the sandbox whose connections are bridged to the
// daemon side (see Client.Reverse).
type ReverseTunnel struct {
	port    uint32
	cancel  context.CancelFunc
	done    chan struct{}
	bridges sync.WaitGroup
}

// Reverse makes the guest listen on 127.0.0.1:port inside the sandbox (0 picks a free
// port, see Port) and bridges every connection accepted there to a new connection from
// dial, with half-closes passed on. A connection whose dial fails is closed. ctx bounds
// the setup only; the tunnel lives until Close or until the client's connection dies.
func (c *Client) Reverse(ctx context.Context, port uint32, dial func(ctx context.Context) (net.Conn, error)) (*ReverseTunnel, error) {
	op := fmt.Sprintf("reverse tunnel from sandbox port %d", port)
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	stream, err := c.tunnels.Listen(callCtx, &guestpb.ListenRequest{Port: port})
	var ev *guestpb.ListenEvent
	if err == nil {
		ev, err = stream.Recv()
	}
	if !stop() {
		cancel()
		return nil, fmt.Errorf("%s: %w", op, ctx.Err())
	}
	if err != nil {
		cancel()
		return nil, translate(ctx, op, err)
	}
	ready, ok := ev.GetMsg().(*guestpb.ListenEvent_ReadyPort)
	if !ok {
		cancel()
		return nil, fmt.Errorf("%s: the guest did not announce its port", op)
	}
	t := &ReverseTunnel{port: ready.ReadyPort, cancel: cancel, done: make(chan struct{})}
	go t.serve(callCtx, c, stream, dial)
	return t, nil
}

// Port is the port the guest listens on inside the sandbox.
func (t *ReverseTunnel) Port() uint32 { return t.port }

// Done is closed when the guest's listener has stopped: after Close, or when the call
// failed (for example because the connection to the guest died).
func (t *ReverseTunnel) Done() <-chan struct{} { return t.done }

// Close stops the listener and every bridged connection, and waits for the daemon side
// of them to end. The guest closes its listener as soon as the cancellation reaches it.
func (t *ReverseTunnel) Close() error {
	t.cancel()
	<-t.done
	t.bridges.Wait()
	return nil
}

func (t *ReverseTunnel) serve(ctx context.Context, c *Client, stream guestpb.DRPCTunnels_ListenClient, dial func(context.Context) (net.Conn, error)) {
	defer close(t.done)
	for {
		ev, err := stream.Recv()
		if err != nil {
			return
		}
		if id := ev.GetAccepted(); id != "" {
			t.bridges.Go(func() { c.bridge(ctx, id, dial) })
		}
	}
}

// bridge claims the announced connection id and joins it with a connection from dial.
func (c *Client) bridge(ctx context.Context, id string, dial func(context.Context) (net.Conn, error)) {
	ctx, cancel := context.WithCancel(ctx)
	stream, err := c.tunnels.Accept(ctx)
	if err != nil {
		cancel()
		return
	}
	if err := stream.Send(&guestpb.TunnelData{Msg: &guestpb.TunnelData_ConnId{ConnId: id}}); err != nil {
		cancel()
		return
	}
	// Once the guest has claimed the connection, cancelling closes it.
	if err := awaitUp(stream); err != nil {
		cancel()
		return
	}
	local, err := dial(ctx)
	if err != nil {
		cancel()
		return
	}
	// From here the tunnel connection owns the call: its Close ends it gracefully.
	join(local, newTunnelConn(stream, cancel, "guest:"+id))
}

// join copies between a and b both ways. The end of one direction half-closes its
// destination (or closes it, when it cannot half-close); an error in either direction
// closes both.
func join(a, b net.Conn) {
	defer a.Close()
	defer b.Close()
	done := make(chan struct{}, 2)
	half := func(dst, src net.Conn) {
		defer func() { done <- struct{}{} }()
		if _, err := io.Copy(dst, src); err != nil {
			a.Close()
			b.Close()
			return
		}
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go half(a, b)
	go half(b, a)
	<-done
	<-done
}
