// Package guestproto holds the wire-level parts of the guest protocol that come
// before DRPC: the version handshake, and the yamux settings and transport sizes both
// sides must share. The services themselves are in guestpb, generated from
// proto/paddock/guest/v1/guest.proto.
package guestproto

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/hashicorp/yamux"
)

// Protocol is the protocol major version. Both sides must speak the same one; a change
// that an older peer cannot understand increments it.
const Protocol = 2

// LegacyProtocol is the protocol of guests from before DRPC (gRPC on the yamux session),
// which the daemon still speaks to sandboxes an older paddock started: see
// ClientHandshakeLegacy.
const LegacyProtocol = 1

// Magic starts every handshake line, so that a stream that is not a guest (a shell's
// greeting, a wrong binary) is told apart from a version mismatch. It keeps the guest's
// former name, which every guest and daemon, old and new, sends and expects.
const Magic = "paddock-agent"

// Hello is the one JSON line each side sends first.
type Hello struct {
	Magic    string `json:"magic"`
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
	// Error is set by the guest when it refuses the connection.
	Error string `json:"error,omitempty"`
	// Features, sent by the guest, names the kinds of stream besides the default one
	// (a yamux session carrying DRPC) that it serves; a guest from before them sends
	// none.
	Features []string `json:"features,omitempty"`
	// Stream, sent by the daemon, asks for one of the guest's Features on this
	// connection instead of the yamux session; empty asks for the session.
	Stream string `json:"stream,omitempty"`
}

// ErrProtocolMismatch is returned when the peer speaks another protocol version.
var ErrProtocolMismatch = errors.New("guest protocol version mismatch")

const handshakeTimeout = 10 * time.Second

// maxHelloLine bounds the handshake line, so a peer cannot make us buffer without end.
const maxHelloLine = 4096

// ClientHandshake runs the daemon's side: it sends its Hello and reads the guest's.
func ClientHandshake(conn net.Conn, version string) (Hello, error) {
	return ClientHandshakeStream(conn, version, "")
}

// ClientHandshakeStream is ClientHandshake asking for the stream kind stream (one of the
// Features the guest announced on an earlier connection) instead of the yamux session.
func ClientHandshakeStream(conn net.Conn, version, stream string) (Hello, error) {
	return clientHandshake(conn, version, stream, Protocol)
}

// ClientHandshakeLegacy is ClientHandshake asking for LegacyProtocol: the daemon's second
// connection to a guest that refused the first for its protocol, with peer.Protocol
// LegacyProtocol.
func ClientHandshakeLegacy(conn net.Conn, version string) (Hello, error) {
	return clientHandshake(conn, version, "", LegacyProtocol)
}

func clientHandshake(conn net.Conn, version, stream string, protocol int) (Hello, error) {
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	defer conn.SetDeadline(time.Time{})
	if err := writeHello(conn, Hello{Magic: Magic, Protocol: protocol, Version: version, Stream: stream}); err != nil {
		return Hello{}, fmt.Errorf("guest handshake: send: %w", err)
	}
	peer, err := readHello(conn)
	if err != nil {
		return Hello{}, fmt.Errorf("guest handshake: %w", err)
	}
	if peer.Protocol != protocol {
		return peer, fmt.Errorf("%w: guest %s speaks protocol %d, this paddock speaks %d",
			ErrProtocolMismatch, peer.Version, peer.Protocol, protocol)
	}
	if peer.Error != "" {
		return peer, fmt.Errorf("guest refused the connection: %s", peer.Error)
	}
	return peer, nil
}

// ServerHandshake runs the guest's side: it reads the daemon's Hello and answers,
// announcing features. A request for a stream kind that is not among features is
// refused.
func ServerHandshake(conn net.Conn, version string, features ...string) (Hello, error) {
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	defer conn.SetDeadline(time.Time{})
	peer, err := readHello(conn)
	if err != nil {
		return Hello{}, fmt.Errorf("guest handshake: %w", err)
	}
	reply := Hello{Magic: Magic, Protocol: Protocol, Version: version, Features: features}
	switch {
	case peer.Protocol != Protocol:
		reply.Error = fmt.Sprintf("protocol %d requested, this guest speaks %d", peer.Protocol, Protocol)
	case peer.Stream != "" && !slices.Contains(features, peer.Stream):
		reply.Error = fmt.Sprintf("stream %q requested, this guest (%s) does not serve it", peer.Stream, version)
	}
	if err := writeHello(conn, reply); err != nil {
		return peer, fmt.Errorf("guest handshake: send: %w", err)
	}
	if reply.Error != "" && peer.Protocol != Protocol {
		return peer, fmt.Errorf("%w: %s", ErrProtocolMismatch, reply.Error)
	}
	if reply.Error != "" {
		return peer, fmt.Errorf("guest handshake: %s", reply.Error)
	}
	return peer, nil
}

func writeHello(w io.Writer, h Hello) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readHello reads exactly one line, one byte at a time, so that nothing after it (the
// yamux session) is consumed into a buffer.
func readHello(r io.Reader) (Hello, error) {
	var line []byte
	var b [1]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return Hello{}, fmt.Errorf("read hello: %w", err)
		}
		if b[0] == '\n' {
			break
		}
		line = append(line, b[0])
		if len(line) > maxHelloLine {
			return Hello{}, errors.New("read hello: line too long; the peer is not a paddock guest")
		}
	}
	var h Hello
	if err := json.Unmarshal(line, &h); err != nil || h.Magic != Magic {
		return Hello{}, fmt.Errorf("the peer is not a paddock guest (it said %q)", truncate(line, 80))
	}
	return h, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// YamuxConfig is the session configuration both sides use. The stream window (1 MiB) is
// what a stream may have in flight: four chunks of file or output. A stream's receive
// buffer grows to hold what has arrived unread, and every call has a stream of its own,
// so a larger window cost each large call a buffer of its size, allocated and cleared
// as it grew: at 16 MiB, 64 MiB into a process's stdin took 1.6 times as long
// (BenchmarkExecInput), at 4 MiB output did (BenchmarkExecOutput).
func YamuxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.MaxStreamWindowSize = 1 << 20
	c.LogOutput = io.Discard
	c.EnableKeepAlive = true
	c.KeepAliveInterval = 15 * time.Second
	c.ConnectionWriteTimeout = 30 * time.Second
	c.StreamOpenTimeout = 30 * time.Second
	return c
}
