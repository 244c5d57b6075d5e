// Package client is the API's client: every call the CLI, the TUI and the web UI's Go
// side make of a daemon, over its unix socket or HTTPS with a token, taking and
// returning the wire types (internal/api/wire). It imports no package of the daemon's.
package client

import "github.com/paddockhq/paddock/internal/api/wire"

// Client talks to a daemon: over its unix socket, or over HTTPS with a token. Its
// transport, Version and Exec are wire.Client's.
type Client struct{ *wire.Client }

// NewClient returns a client for the daemon listening on socket.
func NewClient(socket string) *Client { return &Client{wire.NewClient(socket)} }

// NewRemoteClient returns a client for the daemon serving the API at rawURL (https, or
// http on a loopback address), authenticating with token, and trusting caPEM's
// certificates besides the system's when it is not empty.
func NewRemoteClient(rawURL, token string, caPEM []byte) (*Client, error) {
	wc, err := wire.NewRemoteClient(rawURL, token, caPEM)
	if err != nil {
		return nil, err
	}
	return &Client{wc}, nil
}
