package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/proxy/egress"
)

// TestConnectTunnelOverConnListener drives the egress proxy the way a sandbox does: an
// http.Server on a connListener, a CONNECT tunnel, and many streamed answers in it.
func TestConnectTunnelOverConnListener(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: start\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(5 * time.Millisecond)
		fmt.Fprint(w, "event: stop\n\n")
	}))
	defer upstream.Close()
	target := strings.TrimPrefix(upstream.URL, "http://")
	p := egress.New(egress.Options{Policy: func(ctx context.Context, sandbox string) (egress.Policy, error) {
		return egress.Policy{Sandbox: []egress.Rule{{Pattern: target, Action: egress.Allow, Scope: sandbox}}}, nil
	}})
	ln := newConnListener()
	defer ln.Close()
	srv := &http.Server{Handler: p.Handler("sb")}
	go srv.Serve(ln)
	defer srv.Close()

	conn, err := ln.dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	for i := range 100 {
		fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: %s\r\nContent-Length: 2\r\n\r\n{}", target)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || !strings.Contains(string(body), "event: stop") {
			t.Fatalf("request %d: body %q, %v", i, body, err)
		}
	}
}
