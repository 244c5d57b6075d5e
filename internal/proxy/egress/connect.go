package egress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
)

// connect serves CONNECT host:port: it checks and dials the destination, then hijacks the connection
// and splices bytes both ways until both sides have finished.
func (h *handler) connect(w http.ResponseWriter, r *http.Request, x *exchange) {
	rawHost, rawPort, err := net.SplitHostPort(r.Host)
	if err != nil || rawPort == "" {
		x.fail(w, http.StatusBadRequest, "paddock: CONNECT needs host:port, got %q", r.Host)
		return
	}
	host, isIP, err := canonicalHost(rawHost)
	if err != nil {
		x.fail(w, http.StatusBadRequest, "paddock: bad CONNECT host: %v", err)
		return
	}
	x.host = host
	if x.port, err = parsePort(rawPort); err != nil {
		x.fail(w, http.StatusBadRequest, "paddock: bad CONNECT port: %v", err)
		return
	}
	addrs, _, ok := h.admit(r.Context(), w, x, host, isIP)
	if !ok {
		return
	}
	upstream, err := h.p.dialAddrs(r.Context(), host, addrs, x.port)
	if err != nil {
		x.fail(w, http.StatusBadGateway, "paddock: cannot reach %s: %v", joinHostPort(host, x.port), err)
		return
	}
	client, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		upstream.Close()
		x.fail(w, http.StatusInternalServerError, "paddock: cannot take over the connection for CONNECT: %v", err)
		return
	}
	x.status = http.StatusOK
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		upstream.Close()
		x.errDetail = err.Error()
		return
	}
	// What the client sends first (say a TLS ClientHello, perhaps already buffered) is read
	// and judged before any of it goes upstream. Past what the server had buffered, it is
	// read from the connection itself: a read error through the server's reader (the
	// screening's deadline) cancels the request's context, which closed the tunnel before
	// its refusal was recorded.
	br := bufio.NewReader(io.MultiReader(bytes.NewReader(buffered(rw.Reader)), client))
	first := func() ([]byte, func(io.Writer) (int64, error), error) {
		return h.screen(x, host, isIP, client, br)
	}
	x.up, x.down = splice(r.Context(), client, upstream, first)
}

// splice copies client to upstream and upstream to client; what the client sends starts
// with what first returns, or goes through the copy it returns, and nothing goes upstream
// if first fails. When one side finishes
// sending, the other is told so with a half-close and may go on answering; when both have finished,
// or either fails, or ctx is done, both connections are closed.
func splice(ctx context.Context, client, upstream net.Conn, first func() ([]byte, func(io.Writer) (int64, error), error)) (up, down int64) {
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			client.Close()
			upstream.Close()
		})
	}
	defer closeBoth()
	stop := context.AfterFunc(ctx, closeBoth)
	defer stop()

	var wg sync.WaitGroup
	wg.Go(func() {
		early, copyUp, err := first()
		if err != nil {
			closeBoth()
			return
		}
		if copyUp != nil {
			n, err := copyUp(upstream)
			up += n
			finish(upstream, err, closeBoth)
			return
		}
		if len(early) > 0 {
			n, err := upstream.Write(early)
			up += int64(n)
			if err != nil {
				closeBoth()
				return
			}
		}
		n, err := io.Copy(upstream, client)
		up += n
		finish(upstream, err, closeBoth)
	})
	n, err := io.Copy(client, upstream)
	down = n
	finish(client, err, closeBoth)
	wg.Wait()
	return up, down
}

// finish ends one direction of a splice: a clean end of input becomes a half-close of dst, anything
// else (or a dst that cannot half-close) closes both connections.
func finish(dst net.Conn, err error, closeBoth func()) {
	if err != nil && !errors.Is(err, io.EOF) {
		closeBoth()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	closeBoth()
}
