package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// A tunnel on a port a rule opens may carry plain HTTP as well as TLS (a rule without a
// port opens 80 as well as 443), and a server shared by many hosts answers a plain request
// for the host its Host header names, not for the one the CONNECT was allowed for. So a
// tunnel that starts with an HTTP request line is read request by request: each must ask
// for the CONNECT's host (its Host header, or the host of an absolute request URI), else
// the tunnel is refused before that request goes upstream. A request that upgrades the
// connection (a WebSocket) ends the reading: what follows it is the new protocol's.

// httpMethods are the request methods that mark a tunnel as carrying HTTP.
var httpMethods = []string{"GET ", "HEAD ", "POST ", "PUT ", "DELETE ", "OPTIONS ", "PATCH ", "TRACE ", "CONNECT ", "PRI "}

// startsHTTP reports whether what the client sends first in a tunnel is an HTTP request
// line. It reads no more than a method's length and waits at most helloTimeout for it; a
// client that starts a method and stalls is refused (err), so that splitting a request
// line cannot get past the check.
func startsHTTP(conn net.Conn, br *bufio.Reader) (bool, error) {
	for n := 1; ; n++ {
		b, err := br.Peek(min(n, br.Buffered()))
		if len(b) < n {
			_ = conn.SetReadDeadline(time.Now().Add(helloTimeout))
			b, err = br.Peek(n)
			_ = conn.SetReadDeadline(time.Time{})
		}
		prefix := string(b)
		partial := false
		for _, m := range httpMethods {
			if strings.HasPrefix(prefix, m) {
				return true, nil
			}
			if strings.HasPrefix(m, prefix) {
				partial = true
			}
		}
		if !partial {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("the tunnel started an HTTP request line and stalled: %w", err)
		}
	}
}

// httpUp copies the HTTP requests read from br to upstream, each after checking that it
// asks for host (canonical) on port; it returns the bytes written. A request for another
// host is refused as domain fronting (recorded as a denial) and ends the tunnel.
func (h *handler) httpUp(x *exchange, host string, br *bufio.Reader, upstream io.Writer) (int64, error) {
	cw := &countingWriter{w: upstream}
	for {
		req, err := http.ReadRequest(br)
		if errors.Is(err, io.EOF) {
			return cw.n, nil
		}
		if err != nil {
			return cw.n, h.refuseTunnel(x, host, fmt.Sprintf("the tunnel to %s carries HTTP paddock cannot read: %v", host, err))
		}
		asked := req.Host
		if req.URL.Host != "" {
			asked = req.URL.Host
		}
		if got, ok := h.sameHost(asked, host, x.port); !ok {
			req.Body.Close()
			return cw.n, h.refuseTunnel(x, got, fmt.Sprintf("HTTP in the tunnel to %s asks for another host, %s (domain fronting)", host, got))
		}
		upgrade := req.Header.Get("Upgrade") != ""
		if req.Header.Get("User-Agent") == "" {
			req.Header["User-Agent"] = []string{""} // as it came: Write would add Go's own
		}
		err = req.Write(cw)
		req.Body.Close()
		if err != nil {
			return cw.n, err
		}
		if upgrade {
			n, err := io.Copy(upstream, br)
			return cw.n + n, err
		}
	}
}

// sameHost reports whether asked (a Host header: host or host:port) names host on port;
// it returns asked as shown in a denial.
func (h *handler) sameHost(asked, host string, port int) (string, bool) {
	name, p := asked, ""
	if hh, pp, err := net.SplitHostPort(asked); err == nil {
		name, p = hh, pp
	}
	canon, _, err := canonicalHost(name)
	if err != nil {
		return fmt.Sprintf("%.253q", asked), false
	}
	if p != "" && p != fmt.Sprint(port) {
		return joinHostPort(canon, mustPort(p)), false
	}
	return canon, canon == host
}

// mustPort is p as a number, 0 when it is not one.
func mustPort(p string) int {
	n, err := parsePort(p)
	if err != nil {
		return 0
	}
	return n
}

// countingWriter counts what it writes to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
