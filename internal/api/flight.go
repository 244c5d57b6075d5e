package api

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/flightrec"
)

// RecordEntry is one entry of a sandbox's flight record (GET /v1/sandboxes/{name}/record).
type RecordEntry = wire.RecordEntry

// RecordReport is what verifying one flight record found (GET /v1/records/verify).
type RecordReport = wire.RecordReport

func (s *Server) flightRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/sandboxes/{name}/record", s.getRecord)
	mux.HandleFunc("GET /v1/records/verify", s.verifyRecords)
	mux.HandleFunc("POST /v1/sandboxes/{name}/merges", s.noteMerge)
}

// flight records what the API did in a sandbox for its caller.
func (s *Server) flight(ctx context.Context, sandbox, kind string, fields map[string]string) {
	s.svc.Flight().Add(sandbox, flightrec.Entry{Kind: kind, Who: flightrec.Who(ctx), Fields: fields})
}

// flightExec records a process run in a sandbox: its argv, the names (not the values)
// of the environment it was given, its exit status and how long it ran.
func (s *Server) flightExec(ctx context.Context, sandbox string, req ExecRequest, code int, err error, took time.Duration) {
	if s.svc.Flight() == nil {
		return
	}
	f := map[string]string{"argv": quoteArgv(req.Argv), "exit": strconv.Itoa(code), "duration_ms": strconv.FormatInt(took.Milliseconds(), 10)}
	var names []string
	for _, kv := range req.Env {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	if len(names) > 0 {
		f["env"] = strings.Join(names, " ")
	}
	if req.Dir != "" {
		f["dir"] = req.Dir
	}
	if req.TTY {
		f["tty"] = "true"
	}
	if err != nil {
		f["error"] = err.Error()
	}
	s.flight(ctx, sandbox, flightrec.KindExec, f)
}

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, ",") + "]"
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func (s *Server) recordOf(w http.ResponseWriter, r *http.Request, name string) bool {
	if s.svc.Flight() == nil {
		s.writeError(w, r, apperr.Unavailable("", "this daemon keeps no flight records"))
		return false
	}
	if !flightrec.ValidName(name) || !s.visible(r.Context(), name) {
		s.writeError(w, r, apperr.NotFound("see `paddock ls`", "no sandbox %q", name))
		return false
	}
	return true
}

func (s *Server) getRecord(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !s.recordOf(w, r, name) {
		return
	}
	s.svc.Flight().Flush(r.Context()) // show what was done before the request, written
	all, err := flightrec.Read(s.svc.Flight().Path(name))
	if errors.Is(err, fs.ErrNotExist) {
		s.writeError(w, r, apperr.NotFound("", "sandbox %q has no flight record yet", name))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	session := r.URL.Query().Get("session")
	out := []RecordEntry{}
	for _, e := range all {
		if session == "" || e.Session == session {
			out = append(out, e)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) verifyRecords(w http.ResponseWriter, r *http.Request) {
	names := []string{r.URL.Query().Get("sandbox")}
	if names[0] != "" {
		if !s.recordOf(w, r, names[0]) {
			return
		}
	} else {
		if !isAdmin(r.Context()) {
			s.writeError(w, r, apperr.Forbidden("name a sandbox of yours: `paddock audit --verify SANDBOX`", "only admins verify every record"))
			return
		}
		if s.svc.Flight() == nil {
			s.writeError(w, r, apperr.Unavailable("", "this daemon keeps no flight records"))
			return
		}
		var err error
		if names, err = s.svc.Store().RecordHeads(r.Context()); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	// Verify what was written, not what is still queued.
	s.svc.Flight().Flush(r.Context())
	out := []RecordReport{}
	for _, name := range names {
		seq, hash, _, err := s.svc.Store().RecordHead(r.Context(), name)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		rep, err := s.svc.Flight().VerifyFile(name, seq, hash)
		if errors.Is(err, fs.ErrNotExist) {
			if seq == 0 {
				s.writeError(w, r, apperr.NotFound("", "sandbox %q has no flight record yet", name))
				return
			}
			rep.Problems = append(rep.Problems, flightrec.Problem{What: "the record's file is gone: the store's head is entry " + strconv.FormatInt(seq, 10)})
		} else if err != nil {
			s.writeError(w, r, err)
			return
		}
		out = append(out, rep)
	}
	writeJSON(w, http.StatusOK, out)
}

// MergeNote is wire.MergeNote.
type MergeNote = wire.MergeNote

func (s *Server) noteMerge(w http.ResponseWriter, r *http.Request) {
	var n MergeNote
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&n); err != nil {
		s.writeError(w, r, apperr.Invalid("", "bad request body: %v", err))
		return
	}
	sb, err := s.svc.Record(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.flight(r.Context(), sb.Name, flightrec.KindMerge, map[string]string{"branch": n.Branch, "ref": n.Ref, "into": n.Into,
		"old": n.Head, "new": n.New, "commits": strings.Join(n.Commits, "\n"), "files": strconv.Itoa(n.Files),
		"fast_forward": strconv.FormatBool(n.FastForward), "where": "the user's checkout (paddock merge)"})
	w.WriteHeader(http.StatusNoContent)
}
