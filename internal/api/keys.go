package api

import (
	"net/http"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

var errEmptyKey = apperr.Invalid("to remove the key paddock keeps, run `paddock key rm PROVIDER`", "no key given")

// KeyRequest is wire.KeyRequest.
type KeyRequest = wire.KeyRequest

func (s *Server) listProviders(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.keys.Providers())
}

func (s *Server) setKey(w http.ResponseWriter, r *http.Request) {
	var req KeyRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Key == "" {
		s.writeError(w, r, errEmptyKey)
		return
	}
	info, err := s.keys.SetKey(r.PathValue("name"), req.Key)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) removeKey(w http.ResponseWriter, r *http.Request) {
	info, err := s.keys.SetKey(r.PathValue("name"), "")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}
