// Package api is the daemon's HTTP API: JSON over a unix socket (and, after `paddock web`,
// over TCP behind tokens: Remote), an NDJSON progress stream for long operations, and
// WebSockets for exec. The CLI, the TUI and the web UI use it through Client. docs/api.md
// documents every route.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/autosync"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/checkpoint"
	"github.com/paddockhq/paddock/internal/doctor"
	"github.com/paddockhq/paddock/internal/flightrec"
	"github.com/paddockhq/paddock/internal/imagebuild"
	"github.com/paddockhq/paddock/internal/metering"
	"github.com/paddockhq/paddock/internal/netpolicy"
	"github.com/paddockhq/paddock/internal/notify"
	"github.com/paddockhq/paddock/internal/proxy/keyring"
	"github.com/paddockhq/paddock/internal/runs"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/snapshot"
	"github.com/paddockhq/paddock/internal/task"
)

// Server serves the API.
type Server struct {
	svc      *sandbox.Service
	sessions *session.Service
	// keys are the credential proxy's keys and logins.
	keys *keyring.Service
	// images are the image verbs over the daemon's backends.
	images *imagebuild.Service
	// syncs are the daemon's syncs and merges into sandboxes' host repositories.
	syncs *autosync.Syncer
	// checks are the doctor's: backends and agents.
	checks *doctor.Service
	// net are the sandboxes' egress rules, denials and learn mode.
	net     *netpolicy.Rules
	log     *slog.Logger
	version Version
	// shutdown is called by POST /v1/daemon/stop.
	shutdown func()
	// web is the TCP listener's state, when the daemon has one (EnableWeb).
	web *webState
	// notifier sends notifications, when the daemon has one (EnableNotify).
	notifier *notify.Notifier
	// snapshots takes and restores snapshots (EnableSnapshots); snapshotsErr says why
	// there are none.
	snapshots    *snapshot.Service
	snapshotsErr error
	// activity records the requests that act on a sandbox, for the idle stop.
	activity *snapshot.Activity
	// preview serves port previews on the TCP listener (EnableWeb).
	preview *previews
	// runs are the host-side agent's runs (EnableRuns); runsErr says why there are none.
	runs    *runs.Service
	runsErr error
	// tasks are the daemon's tasks (EnableTasks); tasksErr says why there are none.
	tasks    *task.Service
	tasksErr error
	// checkpoints are the sandboxes' time machine (EnableCheckpoints).
	checkpoints    *checkpoint.Service
	checkpointsErr error
	// meter is the credential proxy's meter (EnableMetering): usage and budgets.
	meter *metering.Meter
}

// Services are what the API serves besides the sandboxes' lifecycle and their sessions,
// each the daemon's own.
type Services struct {
	// Keys are the credential proxy's keys and logins.
	Keys *keyring.Service
	// Images builds, loads and prepares sandbox images.
	Images *imagebuild.Service
	// Syncs records syncs, and syncs and merges into host repositories here.
	Syncs *autosync.Syncer
	// Doctor checks the backends and the agents' CLIs.
	Doctor *doctor.Service
	// Net are the sandboxes' egress rules, denials and learn mode (sandbox.Service.Net).
	Net *netpolicy.Rules
}

// NewServer builds the API handler.
func NewServer(svc *sandbox.Service, sessions *session.Service, more Services, version Version, log *slog.Logger, shutdown func()) *Server {
	return &Server{svc: svc, sessions: sessions, keys: more.Keys, images: more.Images, syncs: more.Syncs, checks: more.Doctor, net: more.Net, log: log, version: version, shutdown: shutdown}
}

// Handler returns the HTTP handler with every route.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/version", s.getVersion)
	mux.HandleFunc("POST /v1/daemon/stop", s.hostOnly(s.stopDaemon))
	mux.HandleFunc("GET /v1/doctor", s.doctor)
	mux.HandleFunc("GET /v1/providers", s.listProviders)
	mux.HandleFunc("PUT /v1/providers/{name}/key", s.hostOnly(s.setKey))
	mux.HandleFunc("DELETE /v1/providers/{name}/key", s.hostOnly(s.removeKey))
	mux.HandleFunc("GET /v1/logins", s.listLogins)
	mux.HandleFunc("PUT /v1/logins/{name}", s.hostOnly(s.setLogin))
	mux.HandleFunc("DELETE /v1/logins/{name}", s.hostOnly(s.removeLogin))
	mux.HandleFunc("GET /v1/sandboxes", s.listSandboxes)
	mux.HandleFunc("POST /v1/sandboxes", s.createSandbox)
	mux.HandleFunc("GET /v1/sandboxes/{name}", s.getSandbox)
	mux.HandleFunc("DELETE /v1/sandboxes/{name}", s.removeSandbox)
	mux.HandleFunc("POST /v1/sandboxes/{name}/start", s.sandboxInfo(s.svc.Start))
	mux.HandleFunc("POST /v1/sandboxes/{name}/stop", s.sandboxInfo(s.svc.Stop))
	mux.HandleFunc("POST /v1/sandboxes/{name}/suspend", s.sandboxInfo(s.svc.Suspend))
	mux.HandleFunc("GET /v1/sandboxes/{name}/exec", s.fullAccess(s.exec))
	mux.HandleFunc("GET /v1/sandboxes/{name}/forward", s.fullAccess(s.forward))
	mux.HandleFunc("GET /v1/sandboxes/{name}/files", s.readFile)
	mux.HandleFunc("PUT /v1/sandboxes/{name}/files", s.writeFile)
	mux.HandleFunc("GET /v1/sandboxes/{name}/stat", s.statFile)
	mux.HandleFunc("GET /v1/sandboxes/{name}/tar", s.tarOut)
	mux.HandleFunc("PUT /v1/sandboxes/{name}/tar", s.tarIn)
	mux.HandleFunc("POST /v1/sandboxes/{name}/syncs", s.recordSync)
	mux.HandleFunc("GET /v1/sandboxes/{name}/syncs", s.listSyncs)
	mux.HandleFunc("PUT /v1/sandboxes/{name}/sync-mode", s.setSyncMode)
	mux.HandleFunc("GET /v1/events", s.streamEvents)
	mux.HandleFunc("POST /v1/images/build", s.hostOnly(s.buildImage))
	mux.HandleFunc("POST /v1/images/load", s.hostOnly(s.loadImage))
	s.netRoutes(mux)
	s.gitRoutes(mux)
	s.webRoutes(mux)
	s.sessionRoutes(mux)
	s.notifyRoutes(mux)
	s.snapshotRoutes(mux)
	s.portRoutes(mux)
	s.runRoutes(mux)
	s.taskRoutes(mux)
	s.checkpointRoutes(mux)
	s.teamRoutes(mux)
	s.usageRoutes(mux)
	s.alarmRoutes(mux)
	s.flightRoutes(mux)
	return s.logged(mux)
}

func (s *Server) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.activity != nil {
			if name, ok := actsOn(r); ok {
				defer s.activity.Hold(name)()
			}
		}
		start := time.Now()
		note := &auditNote{}
		caller, _ := who(r.Context())
		r = r.WithContext(flightrec.WithWho(context.WithValue(r.Context(), auditNoteKey{}, note), caller))
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		s.log.Debug("api", "method", r.Method, "path", r.URL.Path, "took", time.Since(start))
		if audited(r) {
			s.recordAudit(r, sw.status, note, time.Since(start))
		}
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// statusOf maps an error kind to an HTTP status.
func statusOf(kind apperr.Kind) int {
	switch kind {
	case apperr.KindInvalid:
		return http.StatusBadRequest
	case apperr.KindNotFound:
		return http.StatusNotFound
	case apperr.KindConflict:
		return http.StatusConflict
	case apperr.KindUnavailable:
		return http.StatusServiceUnavailable
	case apperr.KindUnauthorized:
		return http.StatusUnauthorized
	case apperr.KindForbidden:
		return http.StatusForbidden
	case apperr.KindRateLimited:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

func errorBody(err error) ErrorBody {
	var b ErrorBody
	b.Error.Kind = apperr.KindOf(err)
	b.Error.Message = err.Error()
	b.Error.Hint = apperr.HintOf(err)
	if b.Error.Kind == apperr.KindInternal && errors.Is(err, os.ErrNotExist) {
		b.Error.Kind = apperr.KindNotFound
	}
	return b
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	b := errorBody(err)
	if b.Error.Kind == apperr.KindInternal {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, statusOf(b.Error.Kind), b)
}

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.version)
}

func (s *Server) stopDaemon(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "stopping"})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	go s.shutdown()
}

// Doctor is what GET /v1/doctor reports.
type Doctor = wire.Doctor

func (s *Server) doctor(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Doctor{Backends: s.checks.Backends(r.Context()), Agents: s.checks.Agents(), Logins: s.keys.Logins()})
}

func (s *Server) listSandboxes(w http.ResponseWriter, r *http.Request) {
	list, err := s.svc.List(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.sandboxUsage(r.Context(), list)
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request) {
	info, err := s.svc.Get(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.oneSandboxUsage(r.Context(), &info)
	writeJSON(w, http.StatusOK, info)
}

// sandboxInfo serves a route that does one thing to the named sandbox and answers it.
func (s *Server) sandboxInfo(fn func(context.Context, string) (sandbox.Info, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		info, err := fn(r.Context(), r.PathValue("name"))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, info)
	}
}

// ProgressEvent is wire.ProgressEvent.
type ProgressEvent = wire.ProgressEvent

// createSandbox takes the CreateRequest as JSON in the X-Paddock-Request header and the
// git bundle as the body, and answers with an NDJSON progress stream.
func (s *Server) createSandbox(w http.ResponseWriter, r *http.Request) {
	var req sandbox.CreateRequest
	if err := json.Unmarshal([]byte(r.Header.Get("X-Paddock-Request")), &req); err != nil {
		s.writeError(w, r, apperr.Invalid("", "bad X-Paddock-Request header: %v", err))
		return
	}
	if callerOf(r.Context()) != nil {
		// Over TCP the request comes from another machine (a context): its paths are not
		// this host's, and none is taken. The sandbox has no host repository here, so it
		// syncs only when asked, into the caller's own clone.
		if req.Rootfs != "" || req.Devcontainer != nil {
			s.writeError(w, r, apperr.Forbidden("leave out --rootfs and --devcontainer, or run `paddock up` on the daemon's host",
				"--rootfs and --devcontainer name paths on the daemon's host, which are not taken over TCP"))
			return
		}
		req.SourcePath = ""
	}
	noteAuditSandbox(r.Context(), req.Name)
	stream := s.progressStream(w, r)
	// The body is read while the response streams: allow both at once.
	http.NewResponseController(w).EnableFullDuplex()
	// The client going away must not leave a half-made sandbox: Create cleans up on
	// error, and runs to the end otherwise.
	ctx := context.WithoutCancel(r.Context())
	var body io.Reader = r.Body
	if req.Clone {
		bundle, wait, err := s.svc.CloneSource(ctx, &req, stream.step)
		if err != nil {
			stream.fail(err)
			return
		}
		defer func() {
			bundle.Close()
			wait()
		}()
		body = bundle
	}
	info, err := s.svc.Create(ctx, req, body, stream.step)
	if err != nil {
		stream.fail(err)
		return
	}
	stream.send(ProgressEvent{Done: true, Sandbox: &info})
}

// progressStream answers a long operation with NDJSON progress: step lines as the work
// goes, then one line with Done set.
type progressStream struct {
	s   *Server
	r   *http.Request
	enc *json.Encoder
	rc  *http.ResponseController
}

func (s *Server) progressStream(w http.ResponseWriter, r *http.Request) *progressStream {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	return &progressStream{s: s, r: r, enc: json.NewEncoder(w), rc: http.NewResponseController(w)}
}

func (p *progressStream) send(ev ProgressEvent) {
	p.enc.Encode(ev)
	p.rc.Flush()
}

// step reports one step of the work.
func (p *progressStream) step(step string) { p.send(ProgressEvent{Step: step}) }

// fail ends the stream with an error, logging it when it is the daemon's own.
func (p *progressStream) fail(err error) {
	b := errorBody(err)
	if b.Error.Kind == apperr.KindInternal {
		p.s.log.Error("request failed", "method", p.r.Method, "path", p.r.URL.Path, "err", err)
	}
	noteAudit(p.r.Context(), "failed: "+b.Error.Message)
	p.send(ProgressEvent{Done: true, Error: &b})
}

// SyncRecord is wire.SyncRecord.
type SyncRecord = wire.SyncRecord

func (s *Server) recordSync(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		s.writeError(w, r, apperr.Invalid("", "bad request body: %v", err))
		return
	}
	if err := s.syncs.Record(r.Context(), r.PathValue("name"), string(raw)); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.flight(r.Context(), r.PathValue("name"), flightrec.KindSync, map[string]string{"result": string(raw)})
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listSyncs(w http.ResponseWriter, r *http.Request) {
	sb, err := s.svc.Record(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rows, err := s.svc.Store().Syncs(r.Context(), sb.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := []SyncRecord{}
	for _, row := range rows {
		out = append(out, SyncRecord{Time: row.Time, Result: json.RawMessage(row.Result)})
	}
	writeJSON(w, http.StatusOK, out)
}

// SyncModeRequest is wire.SyncModeRequest.
type SyncModeRequest = wire.SyncModeRequest

func (s *Server) setSyncMode(w http.ResponseWriter, r *http.Request) {
	var req SyncModeRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	info, err := s.svc.SetSyncMode(r.Context(), r.PathValue("name"), req.Mode)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// ImageBuildRequest is wire.ImageBuildRequest.
type ImageBuildRequest = wire.ImageBuildRequest

// ImageLoadRequest is wire.ImageLoadRequest.
type ImageLoadRequest = wire.ImageLoadRequest

// loadImage copies a local image to a backend's nodes, answering with an NDJSON
// progress stream whose last line has done set (or an error).
func (s *Server) loadImage(w http.ResponseWriter, r *http.Request) {
	var req ImageLoadRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	stream := s.progressStream(w, r)
	if err := s.images.Load(r.Context(), req.Backend, req.Image, stream.step); err != nil {
		stream.fail(err)
		return
	}
	stream.send(ProgressEvent{Done: true, Step: req.Image})
}

// buildImage builds a sandbox image, answering with an NDJSON progress stream whose last
// line has done set (with the image in step, or an error).
func (s *Server) buildImage(w http.ResponseWriter, r *http.Request) {
	var req ImageBuildRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	stream := s.progressStream(w, r)
	progress := stream.step
	var tag string
	var err error
	if req.Dockerfile != "" {
		tag, err = req.Tag, s.images.Dockerfile(r.Context(), req.Backend, req.Context, req.Dockerfile, req.Tag, progress)
	} else {
		tag, err = s.images.Build(r.Context(), req.Backend, backend.ImageSpec{Tag: req.Tag, Minimal: req.Minimal}, req.Agents, progress)
	}
	if err == nil && req.Format != "" {
		_, err = s.images.Prepare(r.Context(), req.Format, tag, progress)
	}
	if err != nil {
		stream.fail(err)
		return
	}
	stream.send(ProgressEvent{Done: true, Step: tag})
}
