package guestproto

import (
	"storj.io/drpc/drpcmanager"
	"storj.io/drpc/drpcwire"
)

// Transport sizes both ends of a guest connection use.
const (
	// MaxMessageSize is the largest message either end takes.
	MaxMessageSize = 16 << 20
	// IOBufferSize is the size of the chunks files and command output move in.
	IOBufferSize = 256 << 10
)

// DRPCOptions is the DRPC configuration of both ends' calls: messages up to
// MaxMessageSize, and a cancelled call ends its yamux stream (each call has its own).
func DRPCOptions() drpcmanager.Options {
	return drpcmanager.Options{
		Reader: drpcwire.ReaderOptions{MaximumBufferSize: MaxMessageSize},
	}
}
