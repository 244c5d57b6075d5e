package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/paddockhq/paddock/internal/api"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/proxy/keyring"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/store"
)

// newTestWeb returns a TCP listener manager over a real store (from openStore), serving
// handler, and a token that authenticates on it.
func newTestWeb(t *testing.T, st *store.Store, handler http.Handler) (*webListener, string) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	svc := sandbox.New(sandbox.Options{Store: st, Backends: map[string]backend.Backend{}, Logger: log})
	srv := api.NewServer(svc, session.New(svc, keyring.New(nil), log), api.Services{Keys: keyring.New(nil), Net: svc.Net()}, wire.Version{}, log, func() {})
	l := newWebListener(srv, st, log)
	srv.EnableWeb(l)
	l.handler = handler
	t.Cleanup(func() { l.close(context.Background()) })
	return l, testToken
}

// testToken is a token openStore stores.
const testToken = "pdk_test-token"

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := sha256.Sum256([]byte(testToken))
	if err := st.CreateToken(context.Background(), store.Token{Name: "test", Hash: h[:], Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestWebStopEndsWebSockets: --stop must cut an exec stream already open, which
// http.Server.Shutdown leaves alone once the connection is hijacked.
func TestWebStopEndsWebSockets(t *testing.T) {
	ctx := context.Background()
	accepted := make(chan struct{})
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		close(accepted)
		c.Read(context.Background()) // until the connection dies
	})
	l, tok := newTestWeb(t, openStore(t), handler)
	st, err := l.Serve(ctx, wire.WebRequest{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Serving || !st.Loopback || st.TLS || !strings.HasPrefix(st.URL, "http://127.0.0.1:") || strings.HasSuffix(st.URL, ":0") {
		t.Fatalf("status: %+v", st)
	}
	c, _, err := websocket.Dial(ctx, st.URL+"/v1/stream", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	<-accepted
	if _, err := l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, _, err := c.Read(rctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the WebSocket outlived --stop: %v", err)
	}
	if _, err := net.Dial("tcp", st.Listen); err == nil {
		t.Fatal("still listening after Stop")
	}
}

// TestWebRestore: a daemon that starts serves the remembered listener again, at the
// same address, and says why when it cannot.
func TestWebRestore(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	first, tok := newTestWeb(t, st, ok)
	served, err := first.Serve(ctx, wire.WebRequest{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	first.close(ctx) // the daemon exits

	second, _ := newTestWeb(t, st, ok)
	second.restore(ctx)
	if got := second.Status(); !got.Serving || got.URL != served.URL {
		t.Fatalf("after restart: %+v, want %s", got, served.URL)
	}
	req, _ := http.NewRequest("GET", served.URL+"/v1/x", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("after restart: %v %v", resp, err)
	}
	resp.Body.Close()
	second.close(ctx)

	// Something else took the port meanwhile.
	squatter, err := net.Listen("tcp", served.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer squatter.Close()
	third, _ := newTestWeb(t, st, ok)
	third.restore(ctx)
	if got := third.Status(); got.Serving || !strings.Contains(got.Error, served.Listen) {
		t.Fatalf("with the port taken: %+v", got)
	}
	// Asking again reports the conflict; the store still remembers the listener.
	if _, err := third.Serve(ctx, wire.WebRequest{Listen: served.Listen}); apperr.KindOf(err) != apperr.KindConflict {
		t.Fatalf("serve on a taken port: %v", err)
	}
	if saved, err := st.GetWebListener(ctx); err != nil || saved.Listen != served.Listen {
		t.Fatalf("remembered: %+v %v", saved, err)
	}
}

// TestWebServeRefusals: bad addresses and TLS files are refused before anything changes.
func TestWebServeRefusals(t *testing.T) {
	ctx := context.Background()
	l, _ := newTestWeb(t, openStore(t), http.NotFoundHandler())
	dir := t.TempDir()
	for _, req := range []wire.WebRequest{
		{Listen: "7777"},
		{Listen: "127.0.0.1:0", TLSCert: "/nonexistent/cert.pem", TLSKey: "/nonexistent/key.pem"},
		{Listen: "127.0.0.1:0", TLSCert: filepath.Join(dir, "c.pem")},
		{Listen: "127.0.0.1:0", TLSCert: "cert.pem", TLSKey: "key.pem"},
	} {
		if _, err := l.Serve(ctx, req); apperr.KindOf(err) != apperr.KindInvalid {
			t.Errorf("%+v: %v, want invalid", req, err)
		}
	}
	if l.Status().Serving {
		t.Fatal("serving after refusals")
	}
}
