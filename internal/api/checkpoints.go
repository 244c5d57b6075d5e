package api

import (
	"context"
	"io"
	"net/http"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/checkpoint"
)

// A sandbox's checkpoints are for whoever sees the sandbox, as its other routes are; a
// fork makes sandboxes, which any caller who may create one and sees the sandbox may
// do (the new sandboxes are the caller's).

// EnableCheckpoints gives the server the daemon's checkpoints, or the reason it has
// none. Call it before Handler.
func (s *Server) EnableCheckpoints(c *checkpoint.Service, err error) {
	s.checkpoints, s.checkpointsErr = c, err
}

func (s *Server) checkpointRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/sandboxes/{name}/checkpoints", s.withCheckpoints(s.listCheckpoints))
	mux.HandleFunc("POST /v1/sandboxes/{name}/checkpoints", s.withCheckpoints(s.takeCheckpoint))
	mux.HandleFunc("GET /v1/sandboxes/{name}/checkpoints/diff", s.withCheckpoints(s.checkpointDiff))
	mux.HandleFunc("POST /v1/sandboxes/{name}/sessions/{session}/rewind", s.withCheckpoints(s.rewindSession))
	mux.HandleFunc("POST /v1/sandboxes/{name}/sessions/{session}/bisect", s.withCheckpoints(s.bisectSession))
	mux.HandleFunc("POST /v1/sandboxes/{name}/fork", s.withCheckpoints(s.forkSandbox))
}

// withCheckpoints serves a checkpoint route of a sandbox the caller sees, on a daemon
// that keeps checkpoints.
func (s *Server) withCheckpoints(h http.HandlerFunc) http.HandlerFunc {
	seen := func(w http.ResponseWriter, r *http.Request) {
		// The sandbox service finds no sandbox the caller does not see.
		if _, err := s.svc.Record(r.Context(), r.PathValue("name")); err != nil {
			s.writeError(w, r, err)
			return
		}
		h(w, r)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		s.withService(s.checkpoints != nil, s.checkpointsErr, "checkpoints", "", seen)(w, r)
	}
}

func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request) {
	cs, err := s.checkpoints.List(r.Context(), r.PathValue("name"), r.URL.Query().Get("session"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if cs == nil {
		cs = []wire.Checkpoint{}
	}
	writeJSON(w, http.StatusOK, cs)
}

func (s *Server) takeCheckpoint(w http.ResponseWriter, r *http.Request) {
	var req wire.CheckpointRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	// A client going away does not cut a checkpoint short: it is recorded whole or not.
	c, err := s.checkpoints.Take(context.WithoutCancel(r.Context()), r.PathValue("name"), req, wire.CheckpointManual)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, c)
}

// checkpointDiff answers what changed between two checkpoints, as git diff prints it.
func (s *Server) checkpointDiff(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	stat := q.Get("stat") == "1" || q.Get("stat") == "true"
	d, err := s.checkpoints.Diff(r.Context(), r.PathValue("name"), q.Get("session"), q.Get("from"), q.Get("to"), stat)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, d)
}

func (s *Server) rewindSession(w http.ResponseWriter, r *http.Request) {
	var req wire.RewindRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	noteAudit(r.Context(), "rewind "+r.PathValue("session")+" to "+req.To)
	// A rewind runs to its end once begun: a half-done one would leave the files of one
	// turn with the conversation of another.
	res, err := s.checkpoints.Rewind(context.WithoutCancel(r.Context()), r.PathValue("name"), r.PathValue("session"), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// bisectSession answers with an NDJSON progress stream ending with the bisect's result.
// The client going away stops the bisect (it changes nothing but its scratch copies).
func (s *Server) bisectSession(w http.ResponseWriter, r *http.Request) {
	var req wire.BisectRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	noteAudit(r.Context(), "bisect "+r.PathValue("session")+": "+req.Check)
	stream := s.progressStream(w, r)
	res, err := s.checkpoints.Bisect(r.Context(), r.PathValue("name"), r.PathValue("session"), req, stream.step)
	if err != nil {
		stream.fail(err)
		return
	}
	stream.send(ProgressEvent{Done: true, Bisect: &res})
}

// forkSandbox answers with an NDJSON progress stream ending with the new sandboxes.
func (s *Server) forkSandbox(w http.ResponseWriter, r *http.Request) {
	var req wire.ForkRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	noteAudit(r.Context(), "fork to "+req.New)
	stream := s.progressStream(w, r)
	// As a creation: the client going away does not leave half-made sandboxes.
	res, err := s.checkpoints.Fork(context.WithoutCancel(r.Context()), r.PathValue("name"), req, stream.step)
	if err != nil {
		stream.fail(err)
		return
	}
	stream.send(ProgressEvent{Done: true, Fork: &res})
}
