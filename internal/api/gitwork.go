package api

import (
	"net/http"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// gitRoutes are the daemon's own sync and merge of a sandbox into its host repository on
// the daemon's machine (the web UI's Sync and Merge; the CLI runs its own, next to the
// repository). A sandbox with no host repository here is refused, saying where to run
// `paddock sync` instead.
func (s *Server) gitRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/sandboxes/{name}/sync", s.syncNow)
	mux.HandleFunc("POST /v1/sandboxes/{name}/merge", s.merge)
}

func (s *Server) syncNow(w http.ResponseWriter, r *http.Request) {
	res, err := s.syncs.Sync(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// MergeRequest is the body of POST /v1/sandboxes/{name}/merge.
type MergeRequest = wire.MergeRequest

func (s *Server) merge(w http.ResponseWriter, r *http.Request) {
	var req MergeRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.tasks != nil && !req.Check {
		// Never beside the merge queue landing on the same branch.
		if sb, err := s.svc.Record(r.Context(), r.PathValue("name")); err == nil && sb.SourcePath != "" {
			if err := s.tasks.NotLanding(r.Context(), sb.SourcePath, ""); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
	}
	res, err := s.syncs.Merge(r.Context(), r.PathValue("name"), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
