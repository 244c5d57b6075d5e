package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// A CONNECT admits a host, but a TLS client names the host it wants in its ClientHello
// (SNI), and a server shared by many hosts (a CDN) answers for the name, not for the
// address: a tunnel to an allowed host on a CDN would reach any host on it. So the proxy
// reads the ClientHello of every tunnel before a byte of it goes upstream and refuses one
// that names another host, or none where the CONNECT named a host.
//
// A tunnel whose first byte does not start a TLS handshake record is not TLS (ssh to a
// git host on a port a rule opens, git://, a database's protocol) and passes as before:
// such protocols carry no name a shared server routes on. Nothing is read until the
// client sends, so a protocol whose server speaks first works too.

// helloLimit bounds the bytes read for a ClientHello: crypto/tls refuses a handshake
// message over 64 KiB, and the records that carry one add a few bytes each.
const helloLimit = 65536 + 1024

// helloTimeout bounds the wait for the rest of a ClientHello once its first byte came: a
// client that starts one and stalls does not hold its tunnel open. A variable for tests.
var helloTimeout = 10 * time.Second

// recordTypeHandshake is the first byte of a TLS record carrying a handshake message.
const recordTypeHandshake = 0x16

// errHelloRead stops the TLS handshake once the ClientHello is read.
var errHelloRead = errors.New("client hello read")

// screen reads what the client sends first in a tunnel to host (canonical; isIP when an
// address) from br, the hijacked connection's reader over conn. It returns the bytes read,
// which splice sends upstream first, or, for a tunnel carrying plain HTTP, the copy that
// checks each request (httpUp), or an error when the tunnel is refused (the refusal
// recorded as a denial) or the client went away.
func (h *handler) screen(x *exchange, host string, isIP bool, conn net.Conn, br *bufio.Reader) ([]byte, func(io.Writer) (int64, error), error) {
	first, err := br.Peek(1)
	if errors.Is(err, io.EOF) {
		return nil, nil, nil // the client sent nothing and finished sending: splice passes that on
	}
	if err != nil {
		return nil, nil, err
	}
	if first[0] == recordTypeHandshake {
		early, err := h.screenTLS(x, host, isIP, conn, br)
		return early, nil, err
	}
	switch isHTTP, err := startsHTTP(conn, br); {
	case err != nil:
		return nil, nil, h.refuseTunnel(x, host, fmt.Sprintf("in the tunnel to %s: %v", host, err))
	case isHTTP:
		return nil, func(upstream io.Writer) (int64, error) { return h.httpUp(x, host, br, upstream) }, nil
	}
	return buffered(br), nil, nil
}

// screenTLS reads the ClientHello that starts a tunnel to host from br and returns the
// bytes read, or an error when it names another server, or none where host is a name.
func (h *handler) screenTLS(x *exchange, host string, isIP bool, conn net.Conn, br *bufio.Reader) ([]byte, error) {
	_ = conn.SetReadDeadline(time.Now().Add(helloTimeout))
	rec := &recorder{r: br, limit: helloLimit}
	name, ok := serverName(rec)
	_ = conn.SetReadDeadline(time.Time{}) // a connection that has no deadlines has the size bound only
	read := append(rec.buf, buffered(br)...)
	switch sni, _, cerr := canonicalHost(name); {
	case !ok:
		return nil, h.refuseTunnel(x, host, fmt.Sprintf("the tunnel to %s starts a TLS record but no ClientHello paddock can read came in %s", host, helloTimeout))
	case name == "" && !isIP:
		return nil, h.refuseTunnel(x, host, fmt.Sprintf("TLS in the tunnel to %s names no server (no SNI)", host))
	case name == "":
		return read, nil
	case cerr != nil || sni != host:
		shown := sni
		if cerr != nil {
			shown = fmt.Sprintf("%.253q", name) // escaped, and no longer than a name may be
		}
		return nil, h.refuseTunnel(x, shown, fmt.Sprintf("TLS in the tunnel to %s names another server, %s (domain fronting)", host, shown))
	}
	return read, nil
}

// serverName reads a ClientHello from r with crypto/tls's own parser and returns the name
// it asks for (SNI, "" when none); ok is false when r did not give a ClientHello.
func serverName(r io.Reader) (name string, ok bool) {
	conf := &tls.Config{GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		name, ok = hello.ServerName, true
		return nil, errHelloRead
	}}
	_ = tls.Server(helloConn{r: r}, conf).HandshakeContext(context.Background())
	return name, ok
}

// refuseTunnel records the refusal of a tunnel already open to the client (so answered by
// closing it, not with a 403) as a denial of host, and returns the error that closes it.
func (h *handler) refuseTunnel(x *exchange, host, reason string) error {
	now := h.p.now()
	x.status, x.reason = http.StatusForbidden, reason
	x.repeat = h.p.repeats.seen(fmt.Sprintf("%s|tls|%s", h.sandbox, joinHostPort(host, x.port)), now)
	h.refused(x, host, reason, now, x.repeat)
	return errors.New(reason)
}

// buffered takes the bytes br holds already.
func buffered(br *bufio.Reader) []byte {
	b, _ := br.Peek(br.Buffered())
	out := append([]byte(nil), b...)
	_, _ = br.Discard(len(b))
	return out
}

// recorder reads from r at most limit bytes, keeping them.
type recorder struct {
	r     io.Reader
	buf   []byte
	limit int
}

func (c *recorder) Read(p []byte) (int, error) {
	if len(c.buf) >= c.limit {
		return 0, errors.New("client hello too large")
	}
	if len(p) > c.limit-len(c.buf) {
		p = p[:c.limit-len(c.buf)]
	}
	n, err := c.r.Read(p)
	c.buf = append(c.buf, p[:n]...)
	return n, err
}

// helloConn is the connection crypto/tls reads a ClientHello from: reads come from r,
// writes (the alert it sends when stopped) go nowhere.
type helloConn struct{ r io.Reader }

func (c helloConn) Read(p []byte) (int, error)     { return c.r.Read(p) }
func (helloConn) Write(p []byte) (int, error)      { return len(p), nil }
func (helloConn) Close() error                     { return nil }
func (helloConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (helloConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (helloConn) SetDeadline(time.Time) error      { return nil }
func (helloConn) SetReadDeadline(time.Time) error  { return nil }
func (helloConn) SetWriteDeadline(time.Time) error { return nil }
