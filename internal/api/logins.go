package api

import (
	"net/http"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// LoginRequest is wire.LoginRequest.
type LoginRequest = wire.LoginRequest

func (s *Server) listLogins(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.keys.Logins())
}

func (s *Server) setLogin(w http.ResponseWriter, r *http.Request) {
	var req LoginRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.keys.SetLogin(r.PathValue("name"), req.Token, req.File)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) removeLogin(w http.ResponseWriter, r *http.Request) {
	st, err := s.keys.RemoveLogin(r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
