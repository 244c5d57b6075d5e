package creds

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// Proxy serves every provider to every sandbox; Handler binds it to one sandbox.
type Proxy struct {
	providers map[string]*Provider
	routes    []*Provider // longest route first
	transport http.RoundTripper
	log       *slog.Logger
	meter     atomic.Pointer[Meter]
	logins    *Logins
	ca        *ProxyCA
}

// SetTLS makes the proxy's port in each sandbox speak TLS too, with ca's certificate
// (see SniffTLS); call it before serving.
func (p *Proxy) SetTLS(ca *ProxyCA) { p.ca = ca }

// TLS returns the proxy's CA, nil when it speaks plain HTTP only.
func (p *Proxy) TLS() *ProxyCA { return p.ca }

// New builds a proxy over the given providers. transport nil means a clone of
// http.DefaultTransport (which honours the daemon's own HTTPS_PROXY).
func New(providers map[string]*Provider, transport http.RoundTripper, log *slog.Logger) *Proxy {
	if transport == nil {
		transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{providers: providers, transport: transport, log: log}
	for _, pr := range providers {
		p.routes = append(p.routes, pr)
	}
	sort.Slice(p.routes, func(i, j int) bool { return len(p.routes[i].Route) > len(p.routes[j].Route) })
	return p
}

// SetMeter meters every model call from now on (nil: none).
func (p *Proxy) SetMeter(m Meter) {
	if m == nil {
		p.meter.Store(nil)
		return
	}
	p.meter.Store(&m)
}

// SetLogins gives the proxy the subscription logins the daemon holds; call it before
// serving. A provider whose Login is there uses it in place of its key.
func (p *Proxy) SetLogins(l *Logins) { p.logins = l }

// Logins returns the subscription logins the proxy uses, nil when none were set.
func (p *Proxy) Logins() *Logins { return p.logins }

// usesLogin reports whether requests to pr go with its subscription login.
func (p *Proxy) usesLogin(pr *Provider) bool {
	return pr.Login != "" && p.logins != nil && p.logins.Has(pr.Login)
}

// Provider returns the provider of this name.
func (p *Proxy) Provider(name string) (*Provider, bool) {
	pr, ok := p.providers[name]
	return pr, ok
}

// Names returns the providers' names, sorted.
func (p *Proxy) Names() []string {
	names := make([]string, 0, len(p.providers))
	for name := range p.providers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// SandboxEnv returns the environment that points a sandbox's agent CLIs at the proxy
// listening on base (e.g. "http://127.0.0.1:4180"), holding token as their key.
func (p *Proxy) SandboxEnv(base, token string) []string {
	var env []string
	for _, pr := range p.providers {
		for k, v := range pr.SandboxEnv {
			v = strings.ReplaceAll(v, "{base}", base+pr.Route)
			env = append(env, k+"="+strings.ReplaceAll(v, "{token}", token))
		}
	}
	sort.Strings(env)
	return env
}

// credentialHeaders are stripped from every request: the sandbox's placeholder must
// never reach a provider, nor a credential it made up reach another one.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key", "Proxy-Authorization", "Cookie", "Chatgpt-Account-Id"}

// Handler serves one sandbox (its id and name), which must present token as its key
// (in any of the provider's usual places), or the placeholder of a subscription login
// made from it (ClaudePlaceholder, CodexAccessPlaceholder). Requests are logged with
// method, path, status, bytes and duration: never a header, never a key.
func (p *Proxy) Handler(sandboxID, sandbox, token string) http.Handler {
	accepted := []string{token, ClaudePlaceholder(token), CodexAccessPlaceholder(token)}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		pr, rest := p.route(r.URL.Path)
		cw := &countingWriter{ResponseWriter: w}
		cr := &countingReader{r: r.Body}
		r.Body = cr
		call := Call{SandboxID: sandboxID, Sandbox: sandbox, Start: start}
		var status int
		if r.URL.Path == CodexRefreshPath {
			pr, status = nil, p.codexRefresh(cw, r, token)
		} else {
			status = p.serve(cw, r, call, accepted, pr, rest)
		}
		if status == 0 {
			status = cw.status
		}
		name := "-"
		if pr != nil {
			name = pr.Name
		}
		p.log.Info("credential proxy", "sandbox", sandbox, "provider", name, "method", r.Method, "path", r.URL.Path,
			"status", status, "bytes_in", cr.n.Load(), "bytes_out", cw.n, "duration", time.Since(start).Round(time.Microsecond))
	})
}

// serve handles one request; it returns the status it wrote itself, or 0 when the
// reverse proxy answered.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, call Call, accepted []string, pr *Provider, rest string) int {
	sandbox := call.Sandbox
	if pr == nil {
		return fail(w, http.StatusNotFound, "paddock: no provider at %s; the credential proxy serves %s", r.URL.Path, p.routeList())
	}
	if !presented(r, accepted) {
		return fail(w, http.StatusUnauthorized, "paddock: this request does not carry the sandbox's placeholder key; use the key paddock set in the sandbox's environment")
	}
	if !allowedPath(pr, rest) {
		return fail(w, http.StatusForbidden, "paddock: %s is not an API path of %s; the credential proxy forwards only %v", rest, pr.Name, pr.Paths)
	}
	// A provider with a subscription login uses it while the daemon holds it: the
	// access token (refreshed on the host when it expires), with the headers that kind
	// of login needs.
	var key, account string
	login := p.usesLogin(pr)
	switch {
	case login:
		lg, err := p.logins.Token(r.Context(), pr.Login)
		if errors.Is(err, ErrLoginRefused) {
			return refuseLogin(w, pr.wire, http.StatusUnauthorized, "paddock: "+err.Error())
		}
		if err != nil {
			return fail(w, http.StatusBadGateway, "paddock: %v", err)
		}
		key, account = lg.AccessToken, lg.AccountID
	case pr.Name == ChatGPT: // no key stands for it
		return refuseLogin(w, pr.wire, http.StatusUnauthorized, fmt.Sprintf("paddock: the daemon holds no %s login for %s: run `paddock login %s` on the daemon's host", pr.Login, pr.Name, pr.Login))
	default:
		k, err := pr.key.get(r.Context(), pr.Name)
		if err != nil {
			return fail(w, http.StatusBadGateway, "paddock: %v", err)
		}
		key = k
	}
	// Every request to a model provider is checked against the budgets, not only the
	// model calls the meter records: a spent budget closes the provider to the sandbox
	// (batches, odd spellings of a path), and any answer that reports usage is recorded.
	var meter Meter
	if m := p.meter.Load(); m != nil && pr.wire != "" {
		meter = *m
		call.Provider, call.Session, call.AgentSession = pr.Name, r.Header.Get(SessionHeader), agentSession(r.Header)
		if len(call.Session) > 64 {
			call.Session = ""
		}
		if ref := meter.Admit(r.Context(), call); ref != nil {
			return refuse(w, pr.wire, ref.Message)
		}
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr2 *httputil.ProxyRequest) {
			out := pr2.Out
			out.URL.Scheme, out.URL.Host = pr.Upstream.Scheme, pr.Upstream.Host
			out.URL.Path = pr.Upstream.Path + rest
			out.URL.RawPath = ""
			out.Host = pr.Upstream.Host
			q := out.URL.Query()
			q.Del("key")
			for _, h := range credentialHeaders {
				out.Header.Del(h)
			}
			if login {
				injectLogin(out.Header, pr, key, account)
				if accountAnswer(pr, rest) {
					out.Header.Del("Accept-Encoding") // read in plain text, to swap the account
				}
			} else {
				pr.inject(out.Header, q, key)
			}
			out.URL.RawQuery = q.Encode()
			out.Header.Del("X-Forwarded-For")
			out.Header.Del(SessionHeader)
			if meter != nil {
				// The transport asks for gzip itself and inflates the answer, so that the
				// meter reads the usage in plain text whatever the agent accepts.
				out.Header.Del("Accept-Encoding")
			}
		},
		Transport:     p.transport,
		FlushInterval: -1, // Server-Sent Events pass through as they come
		ModifyResponse: func(resp *http.Response) error {
			if login && resp.StatusCode == http.StatusUnauthorized {
				// The provider refused the real token: say so to the agent, in its
				// provider's words, and refresh before the next request.
				p.logins.Refused(pr.Login, resp.StatusCode)
				p.log.Warn("credential proxy: the provider refused a subscription login", "sandbox", sandbox, "provider", pr.Name, "login", pr.Login)
				resp.Body.Close()
				loginRefusal(resp, pr.wire, fmt.Sprintf("paddock: %s refused the %s login the daemon holds (401): it may have been revoked or signed out; run `paddock login %s` on the daemon's host, then try again",
					pr.Name, pr.Login, pr.Login))
				return nil
			}
			if login && accountAnswer(pr, rest) && account != "" {
				if err := swapAccount(resp, account); err != nil {
					return err
				}
			}
			if meter == nil {
				return nil
			}
			got := Answer{Status: resp.StatusCode}
			if pr.wire == WireGemini {
				got.Model = geminiModel(rest)
			}
			model := modelCall(pr.wire, r.Method, rest)
			resp.Body = watchUsage(resp.Body, pr.wire, resp.Header.Get("Content-Type"), got, func(a Answer) {
				if model || a.Reported {
					call.Duration = time.Since(call.Start)
					meter.Record(call, a)
				}
			})
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.log.Warn("credential proxy upstream", "sandbox", sandbox, "provider", pr.Name, "err", err)
			fail(w, http.StatusBadGateway, "paddock: %s upstream %s: %v", pr.Name, pr.Upstream.Host, scrub(err, key))
		},
	}
	// The upstream may answer before the transport has read the end of the request body;
	// by default net/http then closes that body, the transport's write fails, and it drops
	// the upstream connection mid-answer. Full duplex keeps the body readable.
	http.NewResponseController(w).EnableFullDuplex()
	rp.ServeHTTP(w, r)
	return 0
}

func (p *Proxy) route(path string) (*Provider, string) {
	for _, pr := range p.routes {
		if path == pr.Route || strings.HasPrefix(path, pr.Route+"/") {
			// The route itself maps to the upstream URL itself: /mcp/x to https://h/mcp.
			return pr, strings.TrimPrefix(path, pr.Route)
		}
	}
	return nil, ""
}

func (p *Proxy) routeList() string {
	var rs []string
	for _, pr := range p.routes {
		rs = append(rs, pr.Route+"/")
	}
	sort.Strings(rs)
	return strings.Join(rs, ", ")
}

func allowedPath(pr *Provider, rest string) bool {
	if strings.Contains(rest, "..") {
		return false
	}
	if len(pr.Paths) == 0 {
		return true
	}
	for _, prefix := range pr.Paths {
		if strings.HasPrefix(rest, prefix) {
			return true
		}
	}
	return false
}

// presented reports whether the request carries one of the sandbox's placeholders, in
// a header or (Gemini's way) the key query parameter.
func presented(r *http.Request, accepted []string) bool {
	candidates := []string{r.Header.Get("X-Api-Key"), r.Header.Get("X-Goog-Api-Key"), r.Header.Get("Api-Key"),
		strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), r.URL.Query().Get("key")}
	for _, c := range candidates {
		for _, token := range accepted {
			if c != "" && subtle.ConstantTimeCompare([]byte(c), []byte(token)) == 1 {
				return true
			}
		}
	}
	return false
}

func fail(w http.ResponseWriter, status int, format string, args ...any) int {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, format+"\n", args...)
	return status
}

// scrub removes the key from an error message, should a transport ever quote it.
func scrub(err error, key string) string {
	msg := err.Error()
	if key != "" {
		msg = strings.ReplaceAll(msg, key, "[key]")
	}
	var ue *url.Error
	if errors.As(err, &ue) && key != "" {
		msg = strings.ReplaceAll(msg, url.QueryEscape(key), "[key]")
	}
	return msg
}

type countingWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer's Flush.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type countingReader struct {
	r io.ReadCloser
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }
