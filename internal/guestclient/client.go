// Package guestclient is the daemon's side of the guest protocol: it dials the
// guest through any transport (a DialFunc), runs the handshake and calls the guest's
// services over gRPC on a yamux session.
package guestclient

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/hashicorp/yamux"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// DialFunc opens one byte stream to the guest (for example through a sandbox backend).
type DialFunc func(ctx context.Context) (net.Conn, error)

// Client is one connection to a guest. Its methods may be called concurrently; each
// call is its own gRPC stream and does not block the others.
type Client struct {
	peer    guestproto.Hello
	dial    DialFunc // for connections of their own (file streams)
	version string
	// bridged says the first connection was made through a command's streams (see
	// Bridged), and so is every other connection dial makes.
	bridged bool
	sess    *yamux.Session
	cc      *grpc.ClientConn
	agent   guestpb.AgentClient
	exec    guestpb.ExecClient
	files   guestpb.FilesClient
	tunnels guestpb.TunnelsClient
	events  guestpb.EventsClient

	closeOnce sync.Once
	closeErr  error
}

// New dials the guest, runs the handshake and sets up the session. It fails with an
// error matching guestproto.ErrProtocolMismatch when the guest speaks another protocol
// version. ctx bounds the setup only; the Client lives until Close or until the
// connection dies (see Done).
func New(ctx context.Context, dial DialFunc, version string) (*Client, error) {
	conn, err := dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("dial agent: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	peer, err := guestproto.ClientHandshake(conn, version)
	if !stop() {
		conn.Close()
		return nil, fmt.Errorf("connect to agent: %w", ctx.Err())
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("connect to agent: %w", err)
	}
	b, ok := conn.(Bridged)
	bridged := ok && b.Bridged()
	sess, err := yamux.Client(conn, guestproto.YamuxConfig())
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("connect to agent: yamux: %w", err)
	}
	cc, err := grpc.NewClient("passthrough:///agent",
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return sess.Open() }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(guestproto.WindowSize),
		grpc.WithInitialConnWindowSize(guestproto.WindowSize),
		grpc.WithReadBufferSize(guestproto.TransportBufferSize),
		grpc.WithWriteBufferSize(guestproto.TransportBufferSize),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(guestproto.MaxMessageSize),
			grpc.MaxCallSendMsgSize(guestproto.MaxMessageSize),
		),
		grpc.WithIdleTimeout(0),
	)
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("connect to agent: grpc: %w", err)
	}
	cc.Connect()
	c := &Client{
		peer:    peer,
		dial:    dial,
		version: version,
		bridged: bridged,
		sess:    sess,
		cc:      cc,
		agent:   guestpb.NewAgentClient(cc),
		exec:    guestpb.NewExecClient(cc),
		files:   guestpb.NewFilesClient(cc),
		tunnels: guestpb.NewTunnelsClient(cc),
		events:  guestpb.NewEventsClient(cc),
	}
	// When the session dies, calls in flight fail at once instead of retrying.
	go func() {
		<-sess.CloseChan()
		c.Close()
	}()
	return c, nil
}

// Close ends every call in flight and the connection. It is safe to call more than once.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.cc.Close()
		if err := c.sess.Close(); err != nil && c.closeErr == nil {
			c.closeErr = err
		}
		if c.closeErr != nil {
			c.closeErr = fmt.Errorf("close guest client: %w", c.closeErr)
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
	resp, err := c.agent.Info(ctx, &guestpb.InfoRequest{})
	if err != nil {
		return nil, translate(ctx, "guest info", err)
	}
	return resp, nil
}
