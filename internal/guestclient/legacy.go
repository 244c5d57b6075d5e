package guestclient

import (
	"context"
	"net"
	"strings"

	"github.com/hashicorp/yamux"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"storj.io/drpc"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// A guest of guestproto.LegacyProtocol (injected by an older paddock into a sandbox that
// still runs) serves the same services, with the same method names and messages, over
// gRPC on one stream of the yamux session. legacyConn carries the generated DRPC clients'
// calls to it, so that the daemon can still reach, sync and stop such a sandbox; a new
// one gets the current guest.
type legacyConn struct {
	cc *grpc.ClientConn
}

var _ drpc.Conn = legacyConn{}

// newLegacyConn starts gRPC on sess, as the daemons of protocol 1 did.
func newLegacyConn(sess *yamux.Session) (legacyConn, error) {
	cc, err := grpc.NewClient("passthrough:///agent",
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return sess.Open() }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(16<<20),
		grpc.WithInitialConnWindowSize(16<<20),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(guestproto.MaxMessageSize),
			grpc.MaxCallSendMsgSize(guestproto.MaxMessageSize),
			grpc.ForceCodec(legacyCodec{}),
		),
		grpc.WithIdleTimeout(0),
	)
	if err != nil {
		return legacyConn{}, err
	}
	cc.Connect()
	return legacyConn{cc: cc}, nil
}

// Invoke runs a unary call.
func (c legacyConn) Invoke(ctx context.Context, rpc string, _ drpc.Encoding, in, out drpc.Message) error {
	return legacyError(c.cc.Invoke(ctx, rpc, in, out))
}

// NewStream starts a streaming call; gRPC's client streams serve every kind.
func (c legacyConn) NewStream(ctx context.Context, rpc string, _ drpc.Encoding) (drpc.Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, rpc)
	if err != nil {
		cancel()
		return nil, legacyError(err)
	}
	tunnel := rpc == "/paddock.agent.v1.Tunnels/Forward" || rpc == "/paddock.agent.v1.Tunnels/Accept"
	return &legacyStream{ClientStream: st, cancel: cancel, awaitUp: tunnel}, nil
}

// Close ends the gRPC connection.
func (c legacyConn) Close() error { return c.cc.Close() }

// Closed is never closed: the Client watches its session.
func (c legacyConn) Closed() <-chan struct{} { return nil }

// legacyStream is a gRPC client stream as a drpc.Stream.
type legacyStream struct {
	grpc.ClientStream
	cancel context.CancelFunc
	// awaitUp: a tunnel's guest of protocol 1 says the connection is up with its
	// response headers, not a TunnelData{up}; the first receive turns one into the other.
	awaitUp bool
}

func (s *legacyStream) MsgSend(msg drpc.Message, _ drpc.Encoding) error {
	return legacyError(s.SendMsg(msg))
}

func (s *legacyStream) MsgRecv(msg drpc.Message, _ drpc.Encoding) error {
	if s.awaitUp {
		s.awaitUp = false
		if md, err := s.Header(); err == nil && md != nil {
			if m, ok := msg.(*guestpb.TunnelData); ok {
				m.Msg = &guestpb.TunnelData_Up{Up: true}
				return nil
			}
		}
	}
	err := s.RecvMsg(msg)
	if err != nil {
		s.cancel()
	}
	return legacyError(err)
}

// Close cancels the call.
func (s *legacyStream) Close() error {
	s.cancel()
	return nil
}

// legacyError is a gRPC status as the guest's code and message, as DRPC would carry
// them, with protocol 1's marked path escape (an InvalidArgument whose message ends so)
// as PathEscapes.
func legacyError(err error) error {
	st, ok := status.FromError(err)
	if err == nil || !ok {
		return err
	}
	code := guestproto.Code(st.Code())
	if code == guestproto.InvalidArgument && strings.HasSuffix(st.Message(), "path escapes root") {
		code = guestproto.PathEscapes
	}
	return guestproto.WireError(&guestproto.Error{Code: code, Message: st.Message()})
}

// legacyCodec encodes the messages for gRPC: the same protobuf encoding DRPC's calls use.
type legacyCodec struct{}

func (legacyCodec) Marshal(v any) ([]byte, error)      { return guestproto.Marshal(v) }
func (legacyCodec) Unmarshal(data []byte, v any) error { return guestproto.Unmarshal(data, v) }
func (legacyCodec) Name() string                       { return "proto" }
