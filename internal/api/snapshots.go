package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/snapshot"
)

// SnapshotRequest is the body of POST /v1/sandboxes/{name}/snapshots.
type SnapshotRequest = wire.SnapshotRequest

// RestoreRequest is the body of POST /v1/snapshots/{ref}/restore.
type RestoreRequest = wire.RestoreRequest

// PruneResult is wire.PruneResult.
type PruneResult = wire.PruneResult

// EnableActivity has the server record each request that acts on a sandbox (an attach,
// an exec, a message, files in or out), for the idle stop. Call it before Handler.
func (s *Server) EnableActivity(a *snapshot.Activity) { s.activity = a }

// actsOn names the sandbox a request acts on: any change, and reading its files or
// running a process in it; not the listings and status reads a UI polls with.
func actsOn(r *http.Request) (string, bool) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/sandboxes/")
	if !ok {
		return "", false
	}
	name, sub, _ := strings.Cut(rest, "/")
	if name == "" {
		return "", false
	}
	switch {
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		return name, true
	case sub == "exec" || sub == "files" || sub == "tar":
		return name, true
	}
	return "", false
}

// EnableSnapshots gives the server the daemon's snapshots, or the reason it has none
// (a store that could not be opened); without either the /v1/snapshots routes answer
// unavailable. Call it before Handler.
func (s *Server) EnableSnapshots(sn *snapshot.Service, err error) {
	s.snapshots, s.snapshotsErr = sn, err
}

func (s *Server) snapshotRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/sandboxes/{name}/snapshots", s.withSnapshots(s.takeSnapshot))
	mux.HandleFunc("GET /v1/snapshots", s.withSnapshots(s.listSnapshots))
	mux.HandleFunc("POST /v1/snapshots/prune", s.adminOnly(s.withSnapshots(s.pruneSnapshots)))
	mux.HandleFunc("POST /v1/snapshots/{ref}/restore", s.hostOnly(s.withSnapshots(s.restoreSnapshot)))
}

// snapshotsHint says how to get snapshots back when their store did not open.
const snapshotsHint = "fix [backup] in the config, then `paddock daemon stop`"

func (s *Server) withSnapshots(h http.HandlerFunc) http.HandlerFunc {
	return s.withService(s.snapshots != nil, s.snapshotsErr, "snapshots", snapshotsHint, h)
}

// withService serves h when a service the daemon may lack is there (present); else it
// answers unavailable (missing).
func (s *Server) withService(present bool, err error, what, hint string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !present {
			s.writeError(w, r, missing(err, what, hint))
			return
		}
		h(w, r)
	}
}

// takeSnapshot answers with an NDJSON progress stream ending with the snapshot.
func (s *Server) takeSnapshot(w http.ResponseWriter, r *http.Request) {
	var req SnapshotRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	stream := s.progressStream(w, r)
	// A client going away does not cut a snapshot short: it finishes, or leaves nothing.
	m, err := s.snapshots.Take(context.WithoutCancel(r.Context()), r.PathValue("name"), req, stream.step)
	if err != nil {
		stream.fail(err)
		return
	}
	stream.send(ProgressEvent{Done: true, Snapshot: m})
}

func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request) {
	sb := r.URL.Query().Get("sandbox")
	if sb != "" && !s.visible(r.Context(), sb) {
		s.writeError(w, r, apperr.NotFound("run `paddock ls` to see your sandboxes", "no sandbox named %q", sb))
		return
	}
	all, err := s.snapshots.List(r.Context(), sb)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var ms []snapshot.Manifest
	for _, m := range all {
		if s.visible(r.Context(), m.Sandbox) {
			ms = append(ms, m)
		}
	}
	if ms == nil {
		ms = []snapshot.Manifest{}
	}
	writeJSON(w, http.StatusOK, ms)
}

func (s *Server) pruneSnapshots(w http.ResponseWriter, r *http.Request) {
	removed, err := s.snapshots.Prune(r.Context(), r.URL.Query().Get("sandbox"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if removed == nil {
		removed = []string{}
	}
	writeJSON(w, http.StatusOK, PruneResult{Removed: removed})
}

// restoreSnapshot answers with an NDJSON progress stream ending with the new sandbox.
func (s *Server) restoreSnapshot(w http.ResponseWriter, r *http.Request) {
	var req RestoreRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	stream := s.progressStream(w, r)
	info, m, err := s.snapshots.Restore(context.WithoutCancel(r.Context()), r.PathValue("ref"), req, stream.step)
	if err != nil {
		stream.fail(err)
		return
	}
	stream.send(ProgressEvent{Done: true, Sandbox: &info, Snapshot: m})
}
