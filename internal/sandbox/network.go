package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/mcp"
	"github.com/paddockhq/paddock/internal/proxy/creds"
	"github.com/paddockhq/paddock/internal/store"
)

// In a sandbox with a closed network (its own network namespace), the proxies listen on
// fixed loopback ports; a sandbox with an open network shares the host's loopback and
// gets free ports chosen at creation.
const (
	closedCredsPort  = 4180
	closedEgressPort = 3128
)

// sandboxEnv is the environment that points a sandbox's tools at its proxies.
func (s *Service) sandboxEnv(sb store.Sandbox) []string {
	var env []string
	if s.opts.Creds != nil {
		env = s.opts.Creds.SandboxEnv(fmt.Sprintf("http://127.0.0.1:%d", sb.CredsPort), sb.CredsToken)
	}
	if sb.Network != "open" {
		proxy := fmt.Sprintf("http://127.0.0.1:%d", sb.EgressPort)
		noProxy := "localhost,127.0.0.1,::1"
		env = append(env, "HTTP_PROXY="+proxy, "HTTPS_PROXY="+proxy, "http_proxy="+proxy, "https_proxy="+proxy,
			"NO_PROXY="+noProxy, "no_proxy="+noProxy, "NODE_USE_ENV_PROXY=1", "PADDOCK_NETWORK=closed")
	} else {
		env = append(env, "PADDOCK_NETWORK=open")
	}
	return env
}

// assignNetwork fills a new sandbox's network fields.
func assignNetwork(sb *store.Sandbox, open bool) error {
	sb.Network, sb.CredsPort, sb.EgressPort = "closed", closedCredsPort, closedEgressPort
	if open {
		sb.Network = "open"
		port, err := freePort()
		if err != nil {
			return err
		}
		sb.CredsPort, sb.EgressPort = port, 0
	}
	b := make([]byte, 16)
	rand.Read(b)
	sb.CredsToken = "paddock-" + hex.EncodeToString(b)
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// attachment is what one guest connection carries for the network: reverse tunnels
// from the sandbox's loopback to the daemon's proxies. When the connection dies, so do
// the tunnels, and the sandbox's listeners with them: the network fails closed.
type attachment struct {
	tunnels   []*guestclient.ReverseTunnel
	listeners []*connListener
	servers   []*http.Server
}

func (a *attachment) close() {
	for _, t := range a.tunnels {
		t.Close()
	}
	for _, srv := range a.servers {
		srv.Close()
	}
	for _, l := range a.listeners {
		l.Close()
	}
}

// attach opens the sandbox's tunnels on a new guest connection.
func (s *Service) attach(ctx context.Context, sb store.Sandbox, c *guestclient.Client) (*attachment, error) {
	a := &attachment{}
	serve := func(port int, h http.Handler, ca *creds.ProxyCA) error {
		ln := newConnListener()
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
		if ca != nil {
			go srv.Serve(creds.SniffTLS(ln, ca.Config))
		} else {
			go srv.Serve(ln)
		}
		a.listeners, a.servers = append(a.listeners, ln), append(a.servers, srv)
		t, err := c.Reverse(ctx, uint32(port), ln.dial)
		if err != nil {
			return err
		}
		a.tunnels = append(a.tunnels, t)
		return nil
	}
	if s.opts.Creds != nil && sb.CredsPort != 0 {
		if err := serve(sb.CredsPort, s.opts.Creds.Handler(sb.ID, sb.Name, sb.CredsToken), s.opts.Creds.TLS()); err != nil {
			a.close()
			return nil, fmt.Errorf("credential proxy tunnel on port %d: %w", sb.CredsPort, err)
		}
	}
	if sb.Network != "open" && sb.EgressPort != 0 {
		if err := serve(sb.EgressPort, s.egress.Handler(sb.Name), nil); err != nil {
			a.close()
			return nil, fmt.Errorf("egress proxy tunnel on port %d: %w", sb.EgressPort, err)
		}
	}
	for _, port := range mcp.HostPorts(s.opts.MCP) {
		if sb.Network == "open" {
			break // the sandbox shares the host's loopback already
		}
		dial := func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		}
		t, err := c.Reverse(ctx, uint32(port), dial)
		if err != nil {
			a.close()
			return nil, fmt.Errorf("MCP server tunnel on port %d: %w", port, err)
		}
		a.tunnels = append(a.tunnels, t)
	}
	return a, nil
}

// connListener is a net.Listener fed by tunnels: each tunnelled connection becomes one
// end of a socket pair whose other end an http.Server accepts.
type connListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newConnListener() *connListener {
	return &connListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return pipeAddr{} }

func (l *connListener) dial(ctx context.Context) (net.Conn, error) {
	client, server, err := socketPair()
	if err != nil {
		return nil, err
	}
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		client.Close()
		server.Close()
		return nil, net.ErrClosed
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

// socketPair returns the two ends of a connected unix socket pair: unlike net.Pipe, it
// buffers in the kernel and supports half-close, as a TCP connection does.
func socketPair() (net.Conn, net.Conn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "tunnel")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			if i == 1 {
				conns[0].Close()
			}
			return nil, nil, err
		}
		conns[i] = c
	}
	return conns[0], conns[1], nil
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "tunnel" }
