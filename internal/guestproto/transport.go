package guestproto

// Transport sizes both ends of a guest connection use. Large windows let one file
// transfer fill a local stream instead of waiting on window updates.
const (
	// MaxMessageSize is the largest gRPC message either end sends or takes.
	MaxMessageSize = 16 << 20
	// WindowSize is gRPC's initial window, per stream and per connection.
	WindowSize = 16 << 20
	// IOBufferSize is the size of the chunks files and command output move in.
	IOBufferSize = 256 << 10
	// TransportBufferSize is each gRPC connection's read buffer, and half its write
	// buffer, held for the connection's life: gRPC's default. At 256 KiB (IOBufferSize)
	// each end held 0.4 MiB more heap for each connection (the daemon one for every
	// running sandbox), with no gain in throughput (BenchmarkExecOutput and
	// BenchmarkExecInput): a chunk larger than the buffer is written through it in turns.
	TransportBufferSize = 32 << 10
)
