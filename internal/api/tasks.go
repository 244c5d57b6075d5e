package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/task"
)

// Tasks are the daemon owner's: every task route is for the daemon's host (the unix
// socket), a token of its own, or an admin. A team member signed in over TCP sees no
// task, since a task's attempts may reach any of the daemon's repositories.

// EnableTasks gives the server the daemon's tasks, or the reason it has none. Call it
// before Handler.
func (s *Server) EnableTasks(t *task.Service, err error) { s.tasks, s.tasksErr = t, err }

func (s *Server) taskRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/tasks", s.withTasks(s.createTask))
	mux.HandleFunc("GET /v1/tasks", s.withTasks(s.listTasks))
	mux.HandleFunc("GET /v1/tasks/{task}", s.withTasks(s.getTask))
	mux.HandleFunc("DELETE /v1/tasks/{task}", s.withTasks(s.removeTask))
	mux.HandleFunc("POST /v1/tasks/{task}/attempts/{n}/review", s.withTasks(s.reviewAttempt))
	mux.HandleFunc("POST /v1/tasks/{task}/land", s.withTasks(s.landTask))
	mux.HandleFunc("POST /v1/sandboxes/{name}/land", s.withTasks(s.landSandbox))
	mux.HandleFunc("GET /v1/queue", s.withTasks(s.listQueue))
	mux.HandleFunc("DELETE /v1/queue/{id}", s.withTasks(s.dropEntry))
}

// withTasks serves a task route to the daemon's owner, on a daemon that keeps tasks.
func (s *Server) withTasks(h http.HandlerFunc) http.HandlerFunc {
	owner := func(w http.ResponseWriter, r *http.Request) {
		if !isAdmin(r.Context()) {
			s.writeError(w, r, apperr.Forbidden("ask the daemon's owner, or an admin of this server",
				"tasks are the daemon owner's: %s %s is not for team members", r.Method, r.URL.Path))
			return
		}
		h(w, r)
	}
	return s.withService(s.tasks != nil, s.tasksErr, "tasks", "", owner)
}

func (s *Server) createTask(w http.ResponseWriter, r *http.Request) {
	var req wire.TaskCreateRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	noteAudit(r.Context(), "task "+req.Name)
	// The client going away does not cut the creation short: the task is recorded
	// whole or not at all.
	t, err := s.tasks.Create(context.WithoutCancel(r.Context()), req, nil)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, t)
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	ts, err := s.tasks.List(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if ts == nil {
		ts = []wire.Task{}
	}
	writeJSON(w, http.StatusOK, ts)
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	t, err := s.tasks.Get(r.Context(), r.PathValue("task"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// removeTask removes a task's attempts' sandboxes, each after a final snapshot, then the
// task, answering with an NDJSON progress stream as a sandbox's removal does.
func (s *Server) removeTask(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("task")
	// A missing task is an answer, not a stream.
	if _, err := s.tasks.Get(r.Context(), name); err != nil {
		s.writeError(w, r, err)
		return
	}
	stream := s.progressStream(w, r)
	if err := s.tasks.Remove(context.WithoutCancel(r.Context()), name, stream.step); err != nil {
		stream.fail(err)
		return
	}
	stream.send(ProgressEvent{Done: true})
}

func (s *Server) reviewAttempt(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 {
		s.writeError(w, r, apperr.Invalid("number attempts from 1, as `paddock task show` does", "no attempt %q", r.PathValue("n")))
		return
	}
	var req wire.ReviewRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.tasks.Review(r.Context(), r.PathValue("task"), n, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) landTask(w http.ResponseWriter, r *http.Request) {
	var req wire.LandRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.tasks.Land(context.WithoutCancel(r.Context()), r.PathValue("task"), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// landSandbox puts a plain sandbox's branch through the merge queue.
func (s *Server) landSandbox(w http.ResponseWriter, r *http.Request) {
	var req wire.SandboxLandRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.tasks.LandSandbox(context.WithoutCancel(r.Context()), r.PathValue("name"), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) listQueue(w http.ResponseWriter, r *http.Request) {
	es, err := s.tasks.Queue(r.Context(), r.URL.Query().Get("task"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if es == nil {
		es = []wire.QueueEntry{}
	}
	writeJSON(w, http.StatusOK, es)
}

func (s *Server) dropEntry(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		s.writeError(w, r, apperr.Invalid("`paddock task queue` lists the entries and their ids", "no queue entry %q", r.PathValue("id")))
		return
	}
	e, err := s.tasks.Drop(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}
