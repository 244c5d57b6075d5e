// Package egress is the proxy through which a sandbox reaches the network. Sandboxes have no network
// but loopback; their HTTP_PROXY and HTTPS_PROXY point at a listener the daemon tunnels here, and this
// proxy lets through only what the sandbox's allowlist names, resolving names itself and refusing
// private addresses unless a rule names them exactly.
package egress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Denial is one refused request, kept so that `paddock net denials` can show what a sandbox tried to
// reach and the user can decide whether to allow it.
type Denial struct {
	// Time is when the request was refused.
	Time time.Time
	// Sandbox is the sandbox that made the request.
	Sandbox string
	// Host is the destination host as the sandbox wrote it, normalised.
	Host string
	// Port is the destination port.
	Port int
	// Reason says why, in words.
	Reason string
	// Repeat is true when the same sandbox was refused the same host and port less than
	// the repeat window ago (Options.RepeatWindow): the recorder should count it against
	// that denial rather than keep it anew. Only the first of a window is logged.
	Repeat bool
}

// Request is one request the policy decided, allowed or refused: what a sandbox reached
// for, as the proxy saw it. Learn mode, the session record and alarms read it.
type Request struct {
	// Time is when the request was decided.
	Time time.Time
	// Sandbox is the sandbox that made the request.
	Sandbox string
	// Method is the request's method: CONNECT for a tunnel, else the plain HTTP method.
	Method string
	// Host is the destination host as the sandbox wrote it, normalised; Port its port.
	Host string
	Port int
	// Path is the plain HTTP request's path, without its query (which may carry
	// secrets); empty for a tunnel, whose path the proxy never sees.
	Path string
	// Allowed says whether the request was let through to be dialled; Reason says why
	// not when it was refused.
	Allowed bool
	Reason  string
	// Explicit says an explicit rule allowed it (not a wildcard or a default).
	Explicit bool
	// Repeat is true for a refusal identical to one less than the repeat window ago.
	Repeat bool
}

// Options configures a Proxy. Only Policy is required.
type Options struct {
	// Policy returns the current policy of a sandbox; it is called for every request, so rule changes
	// apply at once.
	Policy func(ctx context.Context, sandbox string) (Policy, error)
	// OnDenial records a denial (the daemon writes it to its database). May be nil. It is called on
	// the request's goroutine, so it should not block for long.
	OnDenial func(Denial)
	// OnRequest, when set, is told of every request the policy decided, allowed or refused
	// (a refusal is told to OnDenial too), before any byte goes to the destination. It is
	// called on the request's goroutine, so it should not block for long.
	OnRequest func(Request)
	// LookupIP resolves a host name; nil means net.DefaultResolver.LookupNetIP with network "ip". The
	// proxy resolves names itself: the sandbox has no DNS.
	LookupIP func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to a resolved address ("ip:port"); nil means a net.Dialer with a 10 s timeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger receives one Info line per request; nil discards them. Refusals the proxy
	// answers itself (denials, bad requests, unreachable hosts) are logged once per repeat
	// window for each sandbox, status, host and port: a sandbox cannot fill the log by
	// asking again.
	Logger *slog.Logger
	// RepeatWindow is how long identical refusals are folded into the first one (logged
	// once, and reported to OnDenial with Repeat set); zero means DefaultRepeatWindow.
	RepeatWindow time.Duration
	// Now is the proxy's clock for folding repeated refusals and for the times it
	// reports; nil is time.Now. A test passes its own, so that what falls within a
	// window does not depend on how fast the machine runs.
	Now func() time.Time
}

// Proxy enforces egress policies. One Proxy serves every sandbox; Handler binds it to one.
type Proxy struct {
	policy    func(ctx context.Context, sandbox string) (Policy, error)
	onDenial  func(Denial)
	onRequest func(Request)
	lookup    func(ctx context.Context, host string) ([]netip.Addr, error)
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	log       *slog.Logger
	repeats   *repeats
	now       func() time.Time
}

// New builds a Proxy from opts, filling in the defaults documented on Options.
func New(opts Options) *Proxy {
	p := &Proxy{policy: opts.Policy, onDenial: opts.OnDenial, onRequest: opts.OnRequest, lookup: opts.LookupIP, dial: opts.Dial, log: opts.Logger,
		repeats: newRepeats(opts.RepeatWindow), now: opts.Now}
	if p.now == nil {
		p.now = time.Now
	}
	if p.lookup == nil {
		p.lookup = defaultLookupIP
	}
	if p.dial == nil {
		p.dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	return p
}

// Handler serves proxy requests from one sandbox: CONNECT host:port, tunnelled with half-close, and
// absolute-form plain HTTP requests (GET http://host/path), forwarded without hop-by-hop headers and
// streamed back as the response arrives. Anything else gets 400. Each request is checked against the
// sandbox's current policy; a refusal gets 403 with the command that would allow it.
//
// Upstream connections of plain HTTP requests are pooled per handler; idle ones close after 90 s.
func (p *Proxy) Handler(sandbox string) http.Handler {
	return p.newHandler(sandbox)
}

// Serve runs Handler(sandbox) on ln until ctx is done, then closes ln, cancels requests in flight,
// closes open tunnels and returns nil once every request has ended. It returns an error only if ln
// fails first.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener, sandbox string) error {
	h := p.newHandler(sandbox)
	defer h.closeIdle()
	var active sync.WaitGroup
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			active.Add(1)
			defer active.Done()
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	var err error
	select {
	case err = <-served:
		err = fmt.Errorf("serve egress proxy for sandbox %q: %w", sandbox, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shutdownCtx); serr != nil {
		_ = srv.Close() // the deadline passed: force the remaining connections closed
	}
	if err == nil {
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = fmt.Errorf("serve egress proxy for sandbox %q: %w", sandbox, serr)
		}
	}
	active.Wait() // hijacked tunnels: they close when ctx is done
	return err
}

// handler is the http.Handler of one sandbox.
type handler struct {
	p       *Proxy
	sandbox string
	// transports forward plain HTTP: [0] for destinations a wildcard or default allowed, [1] for
	// destinations an explicit rule allowed. Keeping them apart means a pooled connection to a private
	// address, opened under an explicit rule, is never reused once that rule is gone.
	transports [2]*http.Transport
}

func (p *Proxy) newHandler(sandbox string) *handler {
	h := &handler{p: p, sandbox: sandbox}
	for i := range h.transports {
		h.transports[i] = &http.Transport{
			Proxy:                 nil, // never the daemon's own proxy settings
			DialContext:           p.dialTarget,
			DisableCompression:    true, // pass Accept-Encoding and bodies through untouched
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	return h
}

func (h *handler) closeIdle() {
	for _, t := range h.transports {
		t.CloseIdleConnections()
	}
}

// exchange is what the log line of one request reports.
type exchange struct {
	method    string
	path      string
	host      string
	port      int
	status    int
	up, down  int64
	reason    string
	errDetail string
	// refused is set when the proxy answered the request itself with an error; repeat,
	// once folded is set, says whether an identical refusal was logged less than the
	// repeat window ago.
	refused, folded, repeat bool
}

// fold decides, once per request, whether this refusal repeats one seen in the window.
func (h *handler) fold(x *exchange, now time.Time) bool {
	if !x.folded {
		x.folded = true
		x.repeat = h.p.repeats.seen(fmt.Sprintf("%s|%d|%s", h.sandbox, x.status, joinHostPort(x.host, x.port)), now)
	}
	return x.repeat
}

// ServeHTTP dispatches on the request form and logs one line per request (one per repeat window for
// identical refusals): never a header, a path or a query, which may carry secrets.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start, at := time.Now(), h.p.now()
	x := exchange{method: r.Method}
	switch {
	case r.Method == http.MethodConnect:
		h.connect(w, r, &x)
	case r.URL.IsAbs():
		h.forward(w, r, &x)
	default:
		x.fail(w, http.StatusBadRequest, "paddock: this is an egress proxy: send absolute-form requests (GET http://host/path) or CONNECT host:port, not %q", r.RequestURI)
	}
	if x.refused && h.fold(&x, at) {
		return
	}
	attrs := []any{"sandbox", h.sandbox, "method", r.Method, "host", x.host, "port", x.port, "status", x.status,
		"bytes_up", x.up, "bytes_down", x.down, "duration", time.Since(start).Round(time.Microsecond)}
	if x.reason != "" {
		attrs = append(attrs, "reason", x.reason)
	}
	if x.errDetail != "" {
		attrs = append(attrs, "error", x.errDetail)
	}
	h.p.log.Info("egress", attrs...)
}

// fail answers with status and a one-line message.
func (x *exchange) fail(w http.ResponseWriter, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	x.status = status
	x.refused = true
	if status >= 500 {
		x.errDetail = msg
	}
	http.Error(w, msg, status)
}

// admit applies the policy to host:port (host canonical) and resolves it: it returns the addresses to
// dial and whether an explicit rule allowed them, or answers the request itself and returns ok false.
func (h *handler) admit(ctx context.Context, w http.ResponseWriter, x *exchange, host string, isIP bool) (addrs []netip.Addr, explicit, ok bool) {
	pol, err := h.p.policy(ctx, h.sandbox)
	if err != nil {
		x.fail(w, http.StatusInternalServerError, "paddock: cannot read the egress policy of sandbox %s: %v", h.sandbox, err)
		return nil, false, false
	}
	if err := pol.Validate(); err != nil {
		x.fail(w, http.StatusInternalServerError, "paddock: the egress policy of sandbox %s is invalid, so all egress is refused: %v", h.sandbox, err)
		return nil, false, false
	}
	d := pol.Decide(host, x.port)
	switch {
	case !d.Allowed && isIP && d.Rule == "", d.Allowed && isIP && !d.Explicit:
		h.deny(w, x, host, "bare IP addresses need an explicit rule")
		return nil, false, false
	case !d.Allowed:
		h.deny(w, x, host, d.Reason) // before any DNS query: a denied name is never resolved
		return nil, false, false
	case isIP:
		h.decided(x, host, true, "", true)
		return []netip.Addr{netip.MustParseAddr(host)}, true, true
	}
	addrs, err = h.p.lookup(ctx, host)
	if err == nil && len(addrs) == 0 {
		err = errors.New("no addresses")
	}
	if err != nil {
		x.fail(w, http.StatusBadGateway, "paddock: cannot resolve %s: %v", host, err)
		return nil, false, false
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
		if !d.Explicit && nonPublic(addrs[i]) {
			h.deny(w, x, host, fmt.Sprintf("%s resolves to a private address %s", host, addrs[i]))
			return nil, false, false
		}
	}
	h.decided(x, host, true, "", d.Explicit)
	return addrs, d.Explicit, true
}

// decided tells OnRequest of the policy's answer to x.
func (h *handler) decided(x *exchange, host string, allowed bool, reason string, explicit bool) {
	if h.p.onRequest == nil {
		return
	}
	h.p.onRequest(Request{Time: h.p.now(), Sandbox: h.sandbox, Method: x.method, Host: host, Port: x.port, Path: x.path,
		Allowed: allowed, Reason: reason, Explicit: explicit, Repeat: x.repeat})
}

// refused tells OnDenial and OnRequest that host was refused for reason.
func (h *handler) refused(x *exchange, host, reason string, now time.Time, repeat bool) {
	if h.p.onDenial != nil {
		h.p.onDenial(Denial{Time: now, Sandbox: h.sandbox, Host: host, Port: x.port, Reason: reason, Repeat: repeat})
	}
	h.decided(x, host, false, reason, false)
}

// deny answers 403 with the command that would allow the destination, and records the denial.
func (h *handler) deny(w http.ResponseWriter, x *exchange, host, reason string) {
	x.reason = reason
	x.host, x.status = host, http.StatusForbidden
	now := h.p.now()
	h.refused(x, host, reason, now, h.fold(x, now))
	hint := host
	if x.port != 80 && x.port != 443 {
		hint = joinHostPort(host, x.port)
	}
	x.fail(w, http.StatusForbidden, "paddock: egress to %s is not allowed for sandbox %s (%s); allow it with: paddock net allow %s --sandbox %s",
		joinHostPort(host, x.port), h.sandbox, reason, hint, h.sandbox)
}
