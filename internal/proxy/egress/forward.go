package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
)

// hopByHop are the headers that describe one connection, not the message, so they stop at a proxy.
var hopByHop = []string{
	"Connection", "Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate",
	"Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// removeHopByHop deletes the hop-by-hop headers of h and those its Connection header names.
func removeHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

// forward serves an absolute-form plain HTTP request: it checks and resolves the destination, sends
// the request on through a transport that dials only the checked addresses, and streams the answer.
func (h *handler) forward(w http.ResponseWriter, r *http.Request, x *exchange) {
	if r.URL.Scheme != "http" {
		x.fail(w, http.StatusBadRequest, "paddock: cannot forward %q URLs: plain HTTP only, use CONNECT for https", r.URL.Scheme)
		return
	}
	host, isIP, err := canonicalHost(r.URL.Hostname())
	if err != nil {
		x.fail(w, http.StatusBadRequest, "paddock: bad host in request URL: %v", err)
		return
	}
	x.host, x.port, x.path = host, 80, r.URL.Path
	if p := r.URL.Port(); p != "" {
		if x.port, err = parsePort(p); err != nil {
			x.fail(w, http.StatusBadRequest, "paddock: bad port in request URL: %v", err)
			return
		}
	} else if strings.HasSuffix(r.URL.Host, ":") {
		x.fail(w, http.StatusBadRequest, "paddock: empty port in request URL %q", r.URL.Host)
		return
	}
	addrs, explicit, ok := h.admit(r.Context(), w, x, host, isIP)
	if !ok {
		return
	}
	// The upstream may answer before the transport has read the end of the request body;
	// by default net/http then closes that body, the transport's write fails, and it drops
	// the upstream connection mid-answer. Full duplex keeps the body readable.
	http.NewResponseController(w).EnableFullDuplex()
	ctx := context.WithValue(r.Context(), targetKey{}, &target{host: host, addrs: addrs, port: x.port})
	out := r.Clone(ctx)
	out.RequestURI = ""
	out.Close = false
	out.Trailer = nil
	out.TransferEncoding = nil
	removeHopByHop(out.Header)
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header["User-Agent"] = []string{""} // stops the transport adding its own
	}
	var up atomic.Int64
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		out.Body = &countingBody{ReadCloser: r.Body, n: &up}
	}
	t := h.transports[0]
	if explicit {
		t = h.transports[1]
	}
	resp, err := t.RoundTrip(out)
	x.up = up.Load()
	if err != nil {
		if r.Context().Err() != nil {
			x.status, x.errDetail = 499, "client went away" // nobody is left to answer
			return
		}
		x.fail(w, http.StatusBadGateway, "paddock: cannot reach %s: %v", joinHostPort(host, x.port), err)
		return
	}
	defer resp.Body.Close()
	removeHopByHop(resp.Header)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	x.status = resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	x.down, err = stream(w, resp.Body)
	x.up = up.Load()
	if err != nil {
		x.errDetail = err.Error()
	}
}

// bufPool holds the copy buffers of stream.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// stream copies body to w, flushing after every read so that a server-sent event or a long-poll
// answer reaches the sandbox as soon as it arrives.
func stream(w http.ResponseWriter, body io.Reader) (int64, error) {
	rc := http.NewResponseController(w)
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var total int64
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			m, err := w.Write(buf[:n])
			total += int64(m)
			if err != nil {
				return total, fmt.Errorf("write response: %w", err)
			}
			if err := rc.Flush(); err != nil {
				return total, fmt.Errorf("flush response: %w", err)
			}
		}
		if errors.Is(rerr, io.EOF) {
			return total, nil
		}
		if rerr != nil {
			return total, fmt.Errorf("read upstream response: %w", rerr)
		}
	}
}

// countingBody counts the bytes read from a request body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// targetKey keys the checked destination of a request in its context.
type targetKey struct{}

// target is a checked destination: the transport may dial only these addresses.
type target struct {
	host  string
	addrs []netip.Addr
	port  int
}

// dialTarget is the transports' dial function. It ignores the address the transport asks for and
// dials the addresses admit checked, carried in the request's context (whose values the transport
// keeps for the dial); without them it refuses.
func (p *Proxy) dialTarget(ctx context.Context, network, addr string) (net.Conn, error) {
	t, ok := ctx.Value(targetKey{}).(*target)
	if !ok {
		return nil, fmt.Errorf("dial %s: no checked destination", addr)
	}
	return p.dialAddrs(ctx, t.host, t.addrs, t.port)
}
