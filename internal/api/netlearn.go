package api

import (
	"net/http"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// NetLearnRequest is wire.NetLearnRequest.
type NetLearnRequest = wire.NetLearnRequest

// NetProposalRequest is wire.NetProposalRequest.
type NetProposalRequest = wire.NetProposalRequest

func (s *Server) netLearnRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/net/learning", s.listNetLearning)
	mux.HandleFunc("POST /v1/net/learning", s.netLearn)
	mux.HandleFunc("GET /v1/net/proposal", s.netProposal)
	mux.HandleFunc("POST /v1/net/proposal", s.applyNetProposal)
}

// mySandbox refuses a sandbox the caller does not see as not found.
func (s *Server) mySandbox(w http.ResponseWriter, r *http.Request, name string) bool {
	if name == "" {
		s.writeError(w, r, apperr.Invalid("name the sandbox", "no sandbox given"))
		return false
	}
	if !s.visible(r.Context(), name) {
		s.writeError(w, r, apperr.NotFound("run `paddock ls` to see your sandboxes", "no sandbox named %q", name))
		return false
	}
	return true
}

func (s *Server) listNetLearning(w http.ResponseWriter, r *http.Request) {
	list, err := s.net.Learnings(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	kept := list[:0]
	for _, l := range list {
		if s.visible(r.Context(), l.Sandbox) {
			kept = append(kept, l)
		}
	}
	writeJSON(w, http.StatusOK, kept)
}

func (s *Server) netLearn(w http.ResponseWriter, r *http.Request) {
	var req NetLearnRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if !s.mySandbox(w, r, req.Sandbox) {
		return
	}
	if req.Stop {
		l, err := s.net.StopLearning(r.Context(), req.Sandbox)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, l)
		return
	}
	var d time.Duration
	if req.For != "" {
		var err error
		if d, err = time.ParseDuration(req.For); err != nil || d <= 0 {
			s.writeError(w, r, apperr.Invalid("give a duration such as 30m, 2h or 24h", "bad duration %q", req.For))
			return
		}
	}
	l, err := s.net.StartLearning(r.Context(), req.Sandbox, d)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}

func (s *Server) netProposal(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !s.mySandbox(w, r, q.Get("sandbox")) {
		return
	}
	p, err := s.net.Propose(r.Context(), q.Get("sandbox"), q.Get("prune") == "1" || q.Get("prune") == "true")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) applyNetProposal(w http.ResponseWriter, r *http.Request) {
	var req NetProposalRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if !s.mySandbox(w, r, req.Sandbox) {
		return
	}
	p, err := s.net.ApplyProposal(r.Context(), req.Sandbox, req.Prune)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}
