package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/netpolicy"
)

// NetRuleRequest is wire.NetRuleRequest.
type NetRuleRequest = wire.NetRuleRequest

func (s *Server) netRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/net/rules", s.listNetRules)
	mux.HandleFunc("POST /v1/net/rules", s.setNetRule)
	mux.HandleFunc("DELETE /v1/net/rules", s.removeNetRule)
	mux.HandleFunc("GET /v1/net/denials", s.listDenials)
	mux.HandleFunc("POST /v1/net/denials/{id}/allow", s.allowDenial)
	s.netLearnRoutes(mux)
}

var errGlobalRule = apperr.Forbidden("scope the rule to one of your sandboxes (--sandbox NAME), or ask an admin",
	"a global egress rule applies to every user's sandboxes: it is for admins")

func (s *Server) listNetRules(w http.ResponseWriter, r *http.Request) {
	rules, err := s.net.List(r.Context(), r.URL.Query().Get("sandbox"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if rules == nil {
		rules = []netpolicy.Rule{}
	}
	writeJSON(w, http.StatusOK, rules)
}

func (s *Server) setNetRule(w http.ResponseWriter, r *http.Request) {
	var req NetRuleRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.writeError(w, r, apperr.Invalid("", "bad request body: %v", err))
		return
	}
	if req.Sandbox == "" && !isAdmin(r.Context()) {
		s.writeError(w, r, errGlobalRule)
		return
	}
	rule, err := s.net.Set(r.Context(), req.Sandbox, req.Pattern, req.Action)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rule)
}

func (s *Server) removeNetRule(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("sandbox") == "" && !isAdmin(r.Context()) {
		s.writeError(w, r, errGlobalRule)
		return
	}
	if err := s.net.Remove(r.Context(), q.Get("sandbox"), q.Get("pattern")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listDenials(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	sb := r.URL.Query().Get("sandbox")
	if sb != "" && !s.visible(r.Context(), sb) {
		s.writeError(w, r, apperr.NotFound("run `paddock ls` to see your sandboxes", "no sandbox named %q", sb))
		return
	}
	list, err := s.net.Denials(r.Context(), sb, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	kept := list[:0]
	for _, d := range list {
		if s.visible(r.Context(), d.Sandbox) {
			kept = append(kept, d)
		}
	}
	writeJSON(w, http.StatusOK, kept)
}

func (s *Server) allowDenial(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		s.writeError(w, r, apperr.Invalid("", "bad denial id %q", r.PathValue("id")))
		return
	}
	if !isAdmin(r.Context()) {
		// The denial's sandbox must be the caller's: found among the denials they see.
		list, err := s.net.Denials(r.Context(), "", 0)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		mine := false
		for _, d := range list {
			mine = mine || (d.ID == id && s.visible(r.Context(), d.Sandbox))
		}
		if !mine {
			s.writeError(w, r, apperr.NotFound("run `paddock net denials` to see them", "no denial %d", id))
			return
		}
	}
	rule, err := s.net.AllowDenial(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rule)
}
