package api

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/runs"
	"github.com/paddockhq/paddock/internal/store"
)

// The wire types of runs.
type (
	RunRequest = wire.RunRequest
	RunEvent   = wire.RunLine
	RunDetail  = wire.RunDetail
)

// EnableRuns gives the server the daemon's runs of the host-side agent, or the reason it
// has none. Call it before Handler.
func (s *Server) EnableRuns(r *runs.Service, err error) { s.runs, s.runsErr = r, err }

func (s *Server) runRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/sandboxes/{name}/runs", s.withRuns(s.startRun))
	mux.HandleFunc("GET /v1/runs", s.withRuns(s.listRuns))
	mux.HandleFunc("GET /v1/runs/{id}", s.withRuns(s.ownRun(s.getRun)))
	mux.HandleFunc("POST /v1/runs/{id}/messages", s.withRuns(s.ownRun(s.continueRun)))
	mux.HandleFunc("POST /v1/runs/{id}/cancel", s.withRuns(s.ownRun(s.cancelRun)))
	mux.HandleFunc("GET /v1/runs/{id}/follow", s.withRuns(s.ownRun(s.followRun)))
}

// ownRun serves a run's route only to who sees the run's sandbox: to others the run
// does not exist.
func (s *Server) ownRun(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !isAdmin(r.Context()) {
			run, err := s.runs.Get(r.Context(), r.PathValue("id"))
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			if !s.visible(r.Context(), run.Sandbox) {
				s.writeError(w, r, apperr.NotFound("run `paddock run --list` to see your runs", "no run %q", r.PathValue("id")))
				return
			}
		}
		h(w, r)
	}
}

func (s *Server) withRuns(h http.HandlerFunc) http.HandlerFunc {
	return s.withService(s.runs != nil, s.runsErr, "runs", "", h)
}

// runStream writes a run's events as NDJSON; the status line goes out with the first.
type runStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	enc     *json.Encoder
	started bool
}

func newRunStream(w http.ResponseWriter) *runStream {
	return &runStream{w: w, rc: http.NewResponseController(w), enc: json.NewEncoder(w)}
}

func (st *runStream) send(ev RunEvent) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.started {
		st.w.Header().Set("Content-Type", "application/x-ndjson")
		st.w.WriteHeader(http.StatusOK)
		st.started = true
	}
	st.enc.Encode(ev)
	st.rc.Flush()
}

// end finishes a stream with err: an error answer when nothing was streamed yet, else an
// error line.
func (s *Server) endRun(w http.ResponseWriter, r *http.Request, st *runStream, err error) {
	if err == nil {
		return
	}
	st.mu.Lock()
	started := st.started
	st.mu.Unlock()
	if !started {
		s.writeError(w, r, err)
		return
	}
	b := errorBody(err)
	st.send(RunEvent{Error: &b})
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	var req RunRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	st := newRunStream(w)
	_, err := s.runs.Start(r.Context(), r.PathValue("name"), req, func(ev runs.Event) { st.send(RunEvent{RunEvent: ev}) })
	s.endRun(w, r, st, err)
}

func (s *Server) continueRun(w http.ResponseWriter, r *http.Request) {
	var req RunRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	st := newRunStream(w)
	_, err := s.runs.Continue(r.Context(), r.PathValue("id"), req, func(ev runs.Event) { st.send(RunEvent{RunEvent: ev}) })
	s.endRun(w, r, st, err)
}

func (s *Server) followRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.runs.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st := newRunStream(w)
	if !s.runs.Follow(r.Context(), run.ID, func(ev runs.Event) { st.send(RunEvent{RunEvent: ev}) }) {
		st.send(RunEvent{RunEvent: runs.Event{Type: "finished", Run: &run}})
	}
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	all, err := s.runs.List(r.Context(), r.URL.Query().Get("sandbox"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list := []store.Run{}
	for _, run := range all {
		if s.visible(r.Context(), run.Sandbox) {
			list = append(list, run)
		}
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.runs.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	steps, err := s.runs.Steps(r.Context(), run.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if steps == nil {
		steps = []store.RunStep{}
	}
	writeJSON(w, http.StatusOK, RunDetail{Run: run, Steps: steps})
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.runs.Cancel(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}
