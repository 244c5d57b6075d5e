package api

import (
	"context"
	"net/http"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// WebListener is the daemon's TCP listener for the API (`paddock web`). The daemon owns
// it, so it outlives the CLI, and remembers it, so a restarted daemon serves it again.
// Its methods may be called concurrently.
type WebListener interface {
	// Serve starts serving the API on req.Listen, in place of any current listener.
	// Unloadable TLS files and bad addresses are apperr.KindInvalid; an address in use
	// is apperr.KindConflict.
	Serve(ctx context.Context, req WebRequest) (WebStatus, error)
	// Stop stops serving and forgets the listener, ending every connection it has open;
	// it returns what was served (Serving false when nothing was).
	Stop(ctx context.Context) (WebStatus, error)
	// Status says what is served now.
	Status() WebStatus
}

// WebRequest is wire.WebRequest.
type WebRequest = wire.WebRequest

// WebStatus is wire.WebStatus.
type WebStatus = wire.WebStatus

// webState is what the server keeps for its TCP listener.
type webState struct {
	listener WebListener
	auth     *remoteAuth
}

// EnableWeb gives the server the daemon's TCP listener: it enables /v1/web and the
// login codes the TCP handler (Remote) accepts. Call it before Handler.
func (s *Server) EnableWeb(l WebListener) {
	s.web = &webState{listener: l, auth: newRemoteAuth(s.svc.Store(), s.log)}
	s.preview = newPreviews(s)
}

func (s *Server) webRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/web", s.hostOnly(s.webStatus))
	mux.HandleFunc("PUT /v1/web", s.hostOnly(s.serveWeb))
	mux.HandleFunc("DELETE /v1/web", s.hostOnly(s.stopWeb))
	mux.HandleFunc("POST /v1/web/login", s.hostOnly(s.webLogin))
	mux.HandleFunc("GET /v1/tokens", s.hostOnly(s.listTokens))
	mux.HandleFunc("POST /v1/tokens", s.hostOnly(s.createToken))
	mux.HandleFunc("DELETE /v1/tokens/{name}", s.hostOnly(s.revokeToken))
}

// webListener returns the TCP listener, or writes why there is none.
func (s *Server) webListener(w http.ResponseWriter, r *http.Request) (WebListener, bool) {
	if s.web == nil {
		s.writeError(w, r, apperr.Unavailable("", "this daemon cannot serve the API over TCP"))
		return nil, false
	}
	return s.web.listener, true
}

func (s *Server) webStatus(w http.ResponseWriter, r *http.Request) {
	l, ok := s.webListener(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, l.Status())
}

func (s *Server) serveWeb(w http.ResponseWriter, r *http.Request) {
	l, ok := s.webListener(w, r)
	if !ok {
		return
	}
	var req WebRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := l.Serve(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Info("serving the API over TCP", "url", st.URL, "tls", st.TLS)
	writeJSON(w, http.StatusOK, s.web.auth.withLogin(st))
}

func (s *Server) stopWeb(w http.ResponseWriter, r *http.Request) {
	l, ok := s.webListener(w, r)
	if !ok {
		return
	}
	st, err := l.Stop(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Every browser signs in again: the sessions and the unused login codes die with the
	// listener. Tokens stay until revoked.
	s.web.auth.forgetLogins()
	s.preview.forgetKeys(nil)
	if err := s.svc.Store().DeleteWebSessions(r.Context()); err != nil {
		s.writeError(w, r, err)
		return
	}
	if st.Serving {
		s.log.Info("stopped serving the API over TCP", "url", st.URL)
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) webLogin(w http.ResponseWriter, r *http.Request) {
	l, ok := s.webListener(w, r)
	if !ok {
		return
	}
	st := l.Status()
	if !st.Serving {
		s.writeError(w, r, apperr.Conflict("run `paddock web` to serve it", "the API is not served over TCP"))
		return
	}
	writeJSON(w, http.StatusOK, s.web.auth.withLogin(st))
}

// hostOnly refuses a route to TCP callers: managing tokens and the listener, stopping
// the daemon, and what names host paths (creating sandboxes, building images) stay with
// whoever holds the unix socket.
func (s *Server) hostOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c := callerOf(r.Context()); c != nil {
			s.writeError(w, r, apperr.Forbidden("run it on the daemon's host, where the command talks to the unix socket",
				"%s %s is not served over TCP", r.Method, r.URL.Path))
			return
		}
		h(w, r)
	}
}

// fullAccess refuses a route to read-only tokens. Only routes that read yet change
// something (exec is a GET) need it: the TCP handler refuses read-only callers every
// method other than GET and HEAD.
func (s *Server) fullAccess(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c := callerOf(r.Context()); c != nil && c.readOnly {
			s.writeError(w, r, readOnlyError(c))
			return
		}
		h(w, r)
	}
}
