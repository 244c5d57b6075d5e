package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/session"
)

// SessionText is wire.SessionText.
type SessionText = wire.SessionText

// RenameRequest is wire.RenameRequest.
type RenameRequest = wire.RenameRequest

func (s *Server) sessionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/sessions", s.listAllSessions)
	mux.HandleFunc("GET /v1/sandboxes/{name}/sessions", s.listSessions)
	mux.HandleFunc("POST /v1/sandboxes/{name}/sessions", s.createSession)
	mux.HandleFunc("DELETE /v1/sandboxes/{name}/sessions/{session}", s.removeSession)
	mux.HandleFunc("POST /v1/sandboxes/{name}/sessions/{session}/restart", s.restartSession)
	mux.HandleFunc("POST /v1/sandboxes/{name}/sessions/{session}/rename", s.renameSession)
	mux.HandleFunc("POST /v1/sandboxes/{name}/sessions/{session}/send", s.sendSession)
	mux.HandleFunc("POST /v1/sandboxes/{name}/sessions/{session}/ask", s.askSession)
	mux.HandleFunc("GET /v1/sandboxes/{name}/sessions/{session}/transcript", s.sessionTranscript)
}

func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return apperr.Invalid("", "bad request body: %v", err)
	}
	return nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	list, err := s.sessions.List(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.sessionUsage(r.Context(), r.PathValue("name"), list)
	writeJSON(w, http.StatusOK, list)
}

// listAllSessions answers the sessions of every sandbox the caller sees, by sandbox.
func (s *Server) listAllSessions(w http.ResponseWriter, r *http.Request) {
	all, err := s.sessions.ListAll(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for name, list := range all {
		s.sessionUsage(r.Context(), name, list)
	}
	writeJSON(w, http.StatusOK, all)
}

// createSession starts a session and, with ?wait=SECONDS, waits until its agent is at
// its prompt.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req session.CreateRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	info, err := s.sessions.Create(r.Context(), r.PathValue("name"), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if wait, _ := time.ParseDuration(r.URL.Query().Get("wait") + "s"); wait > 0 {
		info.Status, _ = s.sessions.WaitReady(r.Context(), r.PathValue("name"), req.Name, wait)
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) removeSession(w http.ResponseWriter, r *http.Request) {
	if err := s.sessions.Remove(r.Context(), r.PathValue("name"), r.PathValue("session")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) restartSession(w http.ResponseWriter, r *http.Request) {
	info, err := s.sessions.Restart(r.Context(), r.PathValue("name"), r.PathValue("session"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) renameSession(w http.ResponseWriter, r *http.Request) {
	var req RenameRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.sessions.Rename(r.Context(), r.PathValue("name"), r.PathValue("session"), req.To); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) sendSession(w http.ResponseWriter, r *http.Request) {
	var req SessionText
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.sessions.Send(r.Context(), r.PathValue("name"), r.PathValue("session"), req.Text); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) askSession(w http.ResponseWriter, r *http.Request) {
	var req SessionText
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	answer, err := s.sessions.Ask(r.Context(), r.PathValue("name"), r.PathValue("session"), req.Text)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, SessionText{Text: answer})
}

func (s *Server) sessionTranscript(w http.ResponseWriter, r *http.Request) {
	entries, err := s.sessions.Transcript(r.Context(), r.PathValue("name"), r.PathValue("session"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, entries)
}
