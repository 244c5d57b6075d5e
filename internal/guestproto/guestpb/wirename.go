package guestpb

import (
	"context"
	"strings"

	"storj.io/drpc"
)

// The Guest service was named Agent before the guest was called the guest, and the
// guests already running in sandboxes (of this protocol, and of protocol 1, which
// guestclient still reaches over gRPC) answer its calls only under that name. So the wire
// keeps it: NewGuestClient and RegisterGuest put the generated "/paddock.agent.v1.Guest/"
// back to "/paddock.agent.v1.Agent/", and a daemon and a guest old and new understand
// each other. The other services never changed name.
const (
	guestPrefix     = "/paddock.agent.v1.Guest/"
	wireGuestPrefix = "/paddock.agent.v1.Agent/"
)

// wireName is rpc as the wire names it.
func wireName(rpc string) string {
	if rest, ok := strings.CutPrefix(rpc, guestPrefix); ok {
		return wireGuestPrefix + rest
	}
	return rpc
}

// NewGuestClient is a client of the Guest service that calls it by its wire name.
func NewGuestClient(cc drpc.Conn) DRPCGuestClient {
	return NewDRPCGuestClient(wireConn{cc})
}

// RegisterGuest serves impl as the Guest service under its wire name.
func RegisterGuest(mux drpc.Mux, impl DRPCGuestServer) error {
	return mux.Register(impl, wireDescription{})
}

// wireConn is a drpc.Conn that calls every method by its wire name.
type wireConn struct{ drpc.Conn }

// Invoke runs a unary call by its wire name.
func (c wireConn) Invoke(ctx context.Context, rpc string, enc drpc.Encoding, in, out drpc.Message) error {
	return c.Conn.Invoke(ctx, wireName(rpc), enc, in, out)
}

// NewStream starts a streaming call by its wire name.
func (c wireConn) NewStream(ctx context.Context, rpc string, enc drpc.Encoding) (drpc.Stream, error) {
	return c.Conn.NewStream(ctx, wireName(rpc), enc)
}

// wireDescription describes the Guest service under its wire names.
type wireDescription struct{ DRPCGuestDescription }

// Method is the generated description's nth method, named as on the wire.
func (d wireDescription) Method(n int) (string, drpc.Encoding, drpc.Receiver, any, bool) {
	rpc, enc, receiver, method, ok := d.DRPCGuestDescription.Method(n)
	return wireName(rpc), enc, receiver, method, ok
}
