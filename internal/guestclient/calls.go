package guestclient

import (
	"context"
	"fmt"

	"github.com/hashicorp/yamux"
	"storj.io/drpc"
	"storj.io/drpc/drpcconn"

	"github.com/paddockhq/paddock/internal/guestproto"
)

// calls is the drpc.Conn of a Client's generated service clients. A DRPC connection
// runs one call at a time, so each call opens a yamux stream of its own, runs as a DRPC
// connection's only call, and closes the stream when it ends: calls never wait for one
// another, and a cancelled call ends only its own stream.
type calls struct {
	sess *yamux.Session
}

var _ drpc.Conn = calls{}

// open starts the DRPC connection of one call.
func (c calls) open() (*drpcconn.Conn, error) {
	stream, err := c.sess.OpenStream()
	if err != nil {
		return nil, fmt.Errorf("open a stream to the guest: %w", err)
	}
	return drpcconn.NewWithOptions(stream, drpcconn.Options{Manager: guestproto.DRPCOptions()}), nil
}

// Invoke runs a unary call.
func (c calls) Invoke(ctx context.Context, rpc string, enc drpc.Encoding, in, out drpc.Message) error {
	conn, err := c.open()
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Invoke(ctx, rpc, enc, in, out)
}

// NewStream starts a streaming call. Its stream is closed when the call ends: when the
// stream is done (both sides have closed, or ctx was cancelled) or a receive fails
// (the guest's end of the call, or an error).
func (c calls) NewStream(ctx context.Context, rpc string, enc drpc.Encoding) (drpc.Stream, error) {
	conn, err := c.open()
	if err != nil {
		return nil, err
	}
	stream, err := conn.NewStream(ctx, rpc, enc)
	if err != nil {
		conn.Close()
		return nil, err
	}
	context.AfterFunc(stream.Context(), func() { conn.Close() })
	return endingStream{stream}, nil
}

// Close does nothing: the session is the Client's to close.
func (c calls) Close() error { return nil }

// Closed is closed with the session.
func (c calls) Closed() <-chan struct{} { return c.sess.CloseChan() }

// endingStream closes a call's stream once a receive has failed: the guest has ended
// its side, and nothing the daemon could still send would be read.
type endingStream struct {
	drpc.Stream
}

// MsgRecv receives one message.
func (s endingStream) MsgRecv(msg drpc.Message, enc drpc.Encoding) error {
	err := s.Stream.MsgRecv(msg, enc)
	if err != nil {
		s.Stream.Close()
	}
	return err
}
