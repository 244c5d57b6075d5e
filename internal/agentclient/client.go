// Package agentclient is the daemon's side of the guest agent protocol: it dials an
// agent through any transport (a DialFunc), runs the handshake and calls the agent's
// services over gRPC on a yamux session.
package agentclient

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/hashicorp/yamux"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/paddockhq/paddock/internal/agentproto"
	"github.com/paddockhq/paddock/internal/agentproto/agentpb"
)

// Transport sizes; they match the agent's. Large windows let one file transfer fill a
// local stream instead of waiting on window updates.
const (
	maxMessageSize = 16 << 20
	windowSize     = 16 << 20
	ioBufferSize   = 256 << 10
)

// DialFunc opens one byte stream to the agent (for example through a sandbox backend).
type DialFunc func(ctx context.Context) (net.Conn, error)

// Client is one connection to an agent. Its methods may be called concurrently; each
// call is its own gRPC stream and does not block the others.
type Client struct {
	peer    agentproto.Hello
	sess    *yamux.Session
	cc      *grpc.ClientConn
	agent   agentpb.AgentClient
	exec    agentpb.ExecClient
	files   agentpb.FilesClient
	tunnels agentpb.TunnelsClient
	events  agentpb.EventsClient

	closeOnce sync.Once
	closeErr  error
}

// New dials the agent, runs the handshake and sets up the session. It fails with an
// error matching agentproto.ErrProtocolMismatch when the agent speaks another protocol
// version. ctx bounds the setup only; the Client lives until Close or until the
// connection dies (see Done).
func New(ctx context.Context, dial DialFunc, version string) (*Client, error) {
	conn, err := dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("dial agent: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	peer, err := agentproto.ClientHandshake(conn, version)
	if !stop() {
		conn.Close()
		return nil, fmt.Errorf("connect to agent: %w", ctx.Err())
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("connect to agent: %w", err)
	}
	sess, err := yamux.Client(conn, agentproto.YamuxConfig())
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("connect to agent: yamux: %w", err)
	}
	cc, err := grpc.NewClient("passthrough:///agent",
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return sess.Open() }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(windowSize),
		grpc.WithInitialConnWindowSize(windowSize),
		grpc.WithReadBufferSize(ioBufferSize),
		grpc.WithWriteBufferSize(ioBufferSize),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(maxMessageSize),
			grpc.MaxCallSendMsgSize(maxMessageSize),
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
		sess:    sess,
		cc:      cc,
		agent:   agentpb.NewAgentClient(cc),
		exec:    agentpb.NewExecClient(cc),
		files:   agentpb.NewFilesClient(cc),
		tunnels: agentpb.NewTunnelsClient(cc),
		events:  agentpb.NewEventsClient(cc),
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
			c.closeErr = fmt.Errorf("close agent client: %w", c.closeErr)
		}
	})
	return c.closeErr
}

// Done is closed when the connection to the agent has died (or was closed), so that the
// owner can dial again.
func (c *Client) Done() <-chan struct{} {
	return c.sess.CloseChan()
}

// Peer is the agent's handshake line: its version and protocol.
func (c *Client) Peer() agentproto.Hello {
	return c.peer
}

// Info asks the agent who and where it is.
func (c *Client) Info(ctx context.Context) (*agentpb.InfoResponse, error) {
	resp, err := c.agent.Info(ctx, &agentpb.InfoRequest{})
	if err != nil {
		return nil, translate(ctx, "agent info", err)
	}
	return resp, nil
}
