// Package guestclient is the daemon's side of the guest protocol: it dials the
// guest through any transport (a DialFunc), runs the handshake and calls the guest's
// services over DRPC on a yamux session, each call on a yamux stream of its own.
package guestclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/hashicorp/yamux"
	"storj.io/drpc"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// DialFunc opens one byte stream to the guest (for example through a sandbox backend).
type DialFunc func(ctx context.Context) (net.Conn, error)

// Client is one connection to a guest. Its methods may be called concurrently; each
// call is its own yamux stream and does not block the others.
type Client struct {
	peer    guestproto.Hello
	dial    DialFunc // for connections of their own (file streams)
	version string
	// bridged says the first connection was made through a command's streams (see
	// Bridged), and so is every other connection dial makes.
	bridged bool
	sess    *yamux.Session
	cc      drpc.Conn
	guest   guestpb.DRPCGuestClient
	exec    guestpb.DRPCExecClient
	files   guestpb.DRPCFilesClient
	tunnels guestpb.DRPCTunnelsClient
	events  guestpb.DRPCEventsClient

	closeOnce sync.Once
	closeErr  error
}

// New dials the guest, runs the handshake and sets up the session. A guest of
// guestproto.LegacyProtocol is dialled again and spoken to in it; New fails with an error
// matching guestproto.ErrProtocolMismatch when the guest speaks another protocol
// version. ctx bounds the setup only; the Client lives until Close or until the
// connection dies (see Done).
func New(ctx context.Context, dial DialFunc, version string) (*Client, error) {
	conn, peer, err := connect(ctx, dial, version, guestproto.ClientHandshake)
	legacy := false
	if errors.Is(err, guestproto.ErrProtocolMismatch) && peer.Protocol == guestproto.LegacyProtocol {
		// A sandbox an older paddock started: it refused this protocol and closed.
		legacy = true
		conn, peer, err = connect(ctx, dial, version, guestproto.ClientHandshakeLegacy)
	}
	if err != nil {
		return nil, err
	}
	b, ok := conn.(Bridged)
	bridged := ok && b.Bridged()
	sess, err := yamux.Client(conn, guestproto.YamuxConfig())
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("connect to the guest: yamux: %w", err)
	}
	var cc drpc.Conn = calls{sess: sess}
	if legacy {
		l, err := newLegacyConn(sess)
		if err != nil {
			sess.Close()
			return nil, fmt.Errorf("connect to the guest: grpc: %w", err)
		}
		cc = l
	}
	c := &Client{
		peer:    peer,
		dial:    dial,
		version: version,
		bridged: bridged,
		sess:    sess,
		cc:      cc,
		guest:   guestpb.NewGuestClient(cc),
		exec:    guestpb.NewDRPCExecClient(cc),
		files:   guestpb.NewDRPCFilesClient(cc),
		tunnels: guestpb.NewDRPCTunnelsClient(cc),
		events:  guestpb.NewDRPCEventsClient(cc),
	}
	// When the session dies, calls in flight fail at once instead of retrying.
	go func() {
		<-sess.CloseChan()
		c.Close()
	}()
	return c, nil
}

// connect dials the guest and runs handshake on the connection.
func connect(ctx context.Context, dial DialFunc, version string,
	handshake func(net.Conn, string) (guestproto.Hello, error)) (net.Conn, guestproto.Hello, error) {
	conn, err := dial(ctx)
	if err != nil {
		return nil, guestproto.Hello{}, fmt.Errorf("dial the guest: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	peer, err := handshake(conn, version)
	if !stop() {
		conn.Close()
		return nil, peer, fmt.Errorf("connect to the guest: %w", ctx.Err())
	}
	if err != nil {
		conn.Close()
		return nil, peer, fmt.Errorf("connect to the guest: %w", err)
	}
	return conn, peer, nil
}

// Close ends every call in flight and the connection. It is safe to call more than once.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.cc.Close()
		if err := c.sess.Close(); err != nil {
			c.closeErr = fmt.Errorf("close guest client: %w", err)
		}
	})
	return c.closeErr
}

// Done is closed when the connection to the guest has died (or was closed), so that the
// owner can dial again.
func (c *Client) Done() <-chan struct{} {
	return c.sess.CloseChan()
}

// Peer is the guest's handshake line: its version and protocol.
func (c *Client) Peer() guestproto.Hello {
	return c.peer
}

// Info asks the guest who and where it is.
func (c *Client) Info(ctx context.Context) (*guestpb.InfoResponse, error) {
	resp, err := c.guest.Info(ctx, &guestpb.InfoRequest{})
	if err != nil {
		return nil, translate(ctx, "guest info", err)
	}
	return resp, nil
}
