package api

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/store"
)

// On a daemon a team shares, each user sees only the sandboxes they made, and admins
// see all: the sandbox service finds no other user's sandbox by name (sandbox.Viewer),
// and what lists across sandboxes (events, denials, snapshots, runs) leaves the others'
// out. What changes every sandbox at once (global egress rules, pruning every
// snapshot, notifications) and what reads everyone's doings (users, the audit log) is
// for admins.

// isAdmin says whether ctx acts as an admin: the daemon's host, or a user named admin.
func isAdmin(ctx context.Context) bool {
	v, ok := sandbox.ViewerOf(ctx)
	return !ok || v.Admin
}

// adminOnly refuses a route to users who are not admins.
func (s *Server) adminOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !isAdmin(r.Context()) {
			s.writeError(w, r, apperr.Forbidden("ask an admin of this server (one of [auth.github] admins)",
				"%s %s is for admins: it reaches every user's sandboxes", r.Method, r.URL.Path))
			return
		}
		h(w, r)
	}
}

// visible says whether ctx's viewer sees the sandbox named; a name no sandbox has now
// is visible to admins only (a removed sandbox's history).
func (s *Server) visible(ctx context.Context, name string) bool {
	if isAdmin(ctx) {
		return true
	}
	_, err := s.svc.Record(ctx, name)
	return err == nil
}

// eventFilter keeps the events of sandboxes ctx's viewer sees.
func (s *Server) eventFilter(ctx context.Context) func(events.Event) bool {
	if isAdmin(ctx) {
		return func(events.Event) bool { return true }
	}
	return func(ev events.Event) bool { return s.visible(ctx, ev.Sandbox) }
}

// auditNote lets a handler add to its request's audit entry: a detail (an exec's argv,
// why a streamed answer failed) and the sandbox when the path does not name it.
type auditNote struct{ detail, sandbox string }

type auditNoteKey struct{}

func noteAudit(ctx context.Context, detail string) {
	if n, ok := ctx.Value(auditNoteKey{}).(*auditNote); ok {
		n.detail = detail
	}
}

func noteAuditSandbox(ctx context.Context, name string) {
	if n, ok := ctx.Value(auditNoteKey{}).(*auditNote); ok {
		n.sandbox = name
	}
}

// audited says whether a request goes into the audit log: whatever changes something,
// and what reads a sandbox's insides or runs a process in it (exec and forward are GETs).
func audited(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return true
	}
	_, acts := actsOn(r)
	return acts || r.Pattern == "GET /v1/sandboxes/{name}/forward"
}

// who names a request's caller for the audit log.
func who(ctx context.Context) (string, int64) {
	c := callerOf(ctx)
	switch {
	case c == nil:
		return "local", 0
	case c.userID != 0:
		return c.login, c.userID
	case c.token != "":
		return "token " + c.token, 0
	}
	return "browser", 0
}

// recordAudit writes a request's audit entry.
func (s *Server) recordAudit(r *http.Request, status int, note *auditNote, took time.Duration) {
	name, userID := who(r.Context())
	remote := r.RemoteAddr
	if callerOf(r.Context()) == nil {
		remote = "unix"
	}
	action := r.Pattern
	if action == "" {
		action = r.Method + " " + r.URL.Path
	}
	e := store.AuditEntry{Time: time.Now().Add(-took), Who: name, UserID: userID, Action: action, Sandbox: r.PathValue("name"),
		Status: status, Detail: note.detail, Remote: remote}
	if e.Sandbox == "" {
		e.Sandbox = note.sandbox
	}
	if e.Sandbox == "" {
		e.Sandbox = r.URL.Query().Get("sandbox")
	}
	if err := s.svc.Store().AddAudit(context.WithoutCancel(r.Context()), e); err != nil {
		s.log.Error("record in the audit log", "action", action, "err", err)
	}
}

// statusWriter remembers the status a handler answered, for the audit log; it passes
// flushes, hijacks (WebSockets) and the ResponseController's calls through.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be taken over")
	}
	if w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return hj.Hijack()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// AuditEntry is wire.AuditEntry.
type AuditEntry = wire.AuditEntry

// UserInfo is wire.UserInfo.
type UserInfo = wire.UserInfo

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (s *Server) teamRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/audit", s.adminOnly(s.listAudit))
	mux.HandleFunc("GET /v1/users", s.adminOnly(s.listUsers))
	mux.HandleFunc("GET /v1/me", s.me)
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	var since time.Time
	if v := r.URL.Query().Get("since"); v != "" {
		p, err := events.ParsePoint(v, time.Now(), false)
		if err != nil {
			s.writeError(w, r, apperr.Invalid("give since as a duration (1h) or a time (RFC 3339)", "since: %v", err))
			return
		}
		since = p.Time
	}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	rows, err := s.svc.Store().Audit(r.Context(), since, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := []AuditEntry{}
	for _, e := range rows {
		out = append(out, AuditEntry{Time: e.Time, Who: e.Who, Action: e.Action, Sandbox: e.Sandbox, Status: e.Status, Detail: e.Detail, Remote: e.Remote})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) userInfos(ctx context.Context, only int64) ([]UserInfo, error) {
	users, err := s.svc.Store().Users(ctx)
	if err != nil {
		return nil, err
	}
	tokens, err := s.svc.Store().Tokens(ctx)
	if err != nil {
		return nil, err
	}
	out := []UserInfo{}
	for _, u := range users {
		if only != 0 && u.ID != only {
			continue
		}
		in := UserInfo{Login: u.Login, Name: u.Name, Admin: u.Admin, Created: u.Created, LastSeen: timePtr(u.LastSeen),
			Checked: timePtr(u.Checked), Revoked: timePtr(u.Revoked), Tokens: []TokenInfo{}}
		for _, t := range tokens {
			if t.UserID == u.ID {
				in.Tokens = append(in.Tokens, tokenInfo(t))
			}
		}
		out = append(out, in)
	}
	return out, nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) {
	out, err := s.userInfos(r.Context(), 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// me answers who the caller is: a user with their tokens, or the daemon's host.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	name, userID := who(r.Context())
	if userID == 0 {
		writeJSON(w, http.StatusOK, UserInfo{Login: name, Admin: true, Tokens: []TokenInfo{}})
		return
	}
	out, err := s.userInfos(r.Context(), userID)
	if err != nil || len(out) == 0 {
		s.writeError(w, r, errors.Join(err, errors.New("the signed-in user is gone")))
		return
	}
	writeJSON(w, http.StatusOK, out[0])
}
