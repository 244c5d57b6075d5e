package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/paddockhq/paddock/internal/api"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/webui"
)

// webListener serves the API on TCP for `paddock web`: the same handler as the unix
// socket, behind the TCP handler's authentication (api.Server.Remote). The daemon owns
// it so it outlives the CLI, and the store remembers it so a restart serves it again.
type webListener struct {
	api     *api.Server
	handler http.Handler // the unix socket's
	store   *store.Store
	log     *slog.Logger

	mu     sync.Mutex
	srv    *http.Server
	ln     net.Listener // srv's; closed by close even when srv.Serve has not started yet
	status wire.WebStatus
	saved  store.WebListener
	// hijacked are the current server's connections taken over by WebSockets (exec),
	// which http.Server.Shutdown leaves open: Stop closes them.
	hijacked *connSet
}

// connSet is a set of connections, safe for concurrent use.
type connSet struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (s *connSet) add(c net.Conn) {
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
	s.conns = map[net.Conn]struct{}{}
}

var _ api.WebListener = (*webListener)(nil)

// newWebListener returns the listener, not serving; set handler before restore.
func newWebListener(srv *api.Server, st *store.Store, log *slog.Logger) *webListener {
	return &webListener{api: srv, store: st, log: log}
}

// restore serves the remembered listener again, if any. A failure is logged and
// reported by Status, not fatal: the daemon still serves its socket.
func (l *webListener) restore(ctx context.Context) {
	saved, err := l.store.GetWebListener(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return
	}
	if err == nil {
		_, err = l.Serve(ctx, wire.WebRequest{Listen: saved.Listen, TLSCert: saved.TLSCert, TLSKey: saved.TLSKey})
	}
	if err != nil {
		l.log.Error("cannot serve the API over TCP again; `paddock web` says more", "listen", saved.Listen, "err", err)
		l.mu.Lock()
		l.status = wire.WebStatus{Listen: saved.Listen, Error: fmt.Sprintf("serving %s again at start failed: %v", saved.Listen, err)}
		l.mu.Unlock()
	}
}

// Serve starts serving on req.Listen in place of the current listener, which is put
// back when the new one cannot start.
func (l *webListener) Serve(ctx context.Context, req wire.WebRequest) (wire.WebStatus, error) {
	if req.Listen == "" {
		req.Listen = "127.0.0.1:7777"
	}
	host, _, err := net.SplitHostPort(req.Listen)
	if err != nil {
		return wire.WebStatus{}, apperr.Invalid("give host:port, e.g. --listen 127.0.0.1:7777", "bad listen address %q: %v", req.Listen, err)
	}
	var cfg *tls.Config
	if (req.TLSCert == "") != (req.TLSKey == "") {
		return wire.WebStatus{}, apperr.Invalid("give both --tls-cert and --tls-key, or neither", "TLS needs a certificate and its key")
	}
	if req.TLSCert != "" {
		if !filepath.IsAbs(req.TLSCert) || !filepath.IsAbs(req.TLSKey) {
			return wire.WebStatus{}, apperr.Invalid("", "the TLS files must be absolute paths")
		}
		pair, err := tls.LoadX509KeyPair(req.TLSCert, req.TLSKey)
		if err != nil {
			return wire.WebStatus{}, apperr.Invalid("check the files are a PEM certificate and its PEM private key, readable by the daemon",
				"load the TLS certificate %s and key %s: %v", req.TLSCert, req.TLSKey, err)
		}
		// HTTP/1.1 only: the exec WebSockets need it.
		cfg = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	old, oldSaved := l.srv, l.saved
	if old != nil {
		l.closeLocked(ctx)
	}
	st, err := l.startLocked(req, host, cfg)
	if err != nil {
		if old != nil {
			// Put the previous listener back, as it was.
			if _, rerr := l.startSaved(oldSaved); rerr != nil {
				l.log.Error("the previous TCP listener could not be restored", "listen", oldSaved.Listen, "err", rerr)
			}
		}
		return wire.WebStatus{}, err
	}
	if err := l.store.SetWebListener(ctx, l.saved); err != nil {
		return st, fmt.Errorf("remember the TCP listener: %w", err)
	}
	return st, nil
}

func (l *webListener) startSaved(s store.WebListener) (wire.WebStatus, error) {
	var cfg *tls.Config
	if s.TLSCert != "" {
		pair, err := tls.LoadX509KeyPair(s.TLSCert, s.TLSKey)
		if err != nil {
			return wire.WebStatus{}, err
		}
		cfg = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	}
	host, _, _ := net.SplitHostPort(s.Listen)
	return l.startLocked(wire.WebRequest{Listen: s.Listen, TLSCert: s.TLSCert, TLSKey: s.TLSKey}, host, cfg)
}

// startLocked listens and serves; l.mu is held.
func (l *webListener) startLocked(req wire.WebRequest, host string, cfg *tls.Config) (wire.WebStatus, error) {
	ln, err := net.Listen("tcp", req.Listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return wire.WebStatus{}, apperr.Conflict("choose another port with --listen", "%s is in use: %v", req.Listen, err)
		}
		return wire.WebStatus{}, apperr.Invalid("give an address of this machine, e.g. --listen 127.0.0.1:7777", "listen on %s: %v", req.Listen, err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	loopback := addr.IP.IsLoopback()
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	hijacked := &connSet{conns: map[net.Conn]struct{}{}}
	srv := &http.Server{
		Handler:           l.api.Remote(api.RemoteOptions{API: l.handler, TLS: cfg != nil, Loopback: loopback, UI: webui.Handler()}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(l.log.Handler(), slog.LevelWarn),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateHijacked {
				hijacked.add(c)
			}
		},
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			l.log.Error("the TCP listener failed", "listen", addr.String(), "err", err)
		}
	}()
	l.srv, l.ln, l.hijacked = srv, ln, hijacked
	l.saved = store.WebListener{Listen: addr.String(), TLSCert: req.TLSCert, TLSKey: req.TLSKey}
	l.status = wire.WebStatus{Serving: true, Listen: addr.String(), URL: browseURL(addr, host, cfg != nil), TLS: cfg != nil, Loopback: loopback}
	return l.status, nil
}

// browseURL is where a browser reaches the listener: the listen host, or for a
// wildcard address, one of this machine's addresses on its network.
func browseURL(addr *net.TCPAddr, host string, tlsOn bool) string {
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if a := networkAddress(); a != "" {
			host = a
		}
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(addr.Port))
}

// networkAddress is this machine's first non-loopback IPv4 address, if any.
func networkAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// Stop stops serving and forgets the listener.
func (l *webListener) Stop(ctx context.Context) (wire.WebStatus, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	was := l.status
	l.closeLocked(ctx)
	l.status = wire.WebStatus{}
	if err := l.store.DeleteWebListener(ctx); err != nil {
		return was, err
	}
	return was, nil
}

// Status says what is served now.
func (l *webListener) Status() wire.WebStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status
}

// close stops serving (at daemon exit), leaving the listener remembered.
func (l *webListener) close(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closeLocked(ctx)
}

// closeLocked shuts the server down and ends its WebSockets; l.mu is held.
func (l *webListener) closeLocked(ctx context.Context) {
	if l.srv == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if l.srv.Shutdown(sctx) != nil {
		l.srv.Close()
	}
	cancel()
	// Shutdown closes only the listeners Serve has taken; Serve runs in a goroutine that
	// may not have started, and a listener left open keeps the port from the next one.
	l.ln.Close()
	l.hijacked.closeAll()
	l.srv, l.ln, l.hijacked = nil, nil, nil
	l.status.Serving = false
}
