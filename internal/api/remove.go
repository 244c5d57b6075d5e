package api

import (
	"context"
	"net/http"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/snapshot"
)

// RemoveRequest says how DELETE /v1/sandboxes/{name} removes a sandbox.
type RemoveRequest = wire.RemoveRequest

// removeSandbox removes a sandbox after its final snapshot (sandbox.Service.Remove),
// answering with an NDJSON progress stream whose last line carries the snapshot taken.
func (s *Server) removeSandbox(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	q := r.URL.Query()
	opts := RemoveRequest{Force: q.Get("force") == "true", Purge: q.Get("purge") == "true"}
	stream := s.progressStream(w, r)
	// The client going away does not cut the removal short: the snapshot finishes or
	// leaves nothing, and the sandbox stays unless it finished.
	ctx := context.WithoutCancel(r.Context())
	var m *snapshot.Manifest
	final := func(ctx context.Context) error {
		if s.snapshots == nil {
			return s.snapshotsMissing()
		}
		var err error
		m, err = s.snapshots.Take(ctx, name, SnapshotRequest{Note: "before rm"}, stream.step)
		return err
	}
	if err := s.svc.Remove(ctx, name, opts, final, stream.step); err != nil {
		stream.fail(err)
		return
	}
	stream.send(ProgressEvent{Done: true, Snapshot: m})
}

// snapshotsMissing says why this daemon takes no snapshots.
func (s *Server) snapshotsMissing() error {
	return missing(s.snapshotsErr, "snapshots", snapshotsHint)
}

// missing is the error of a service the daemon lacks: why it could not be made (err,
// with hint), or that this daemon keeps no such thing.
func missing(err error, what, hint string) error {
	if err != nil {
		return apperr.Unavailable(hint, "%s: %v", what, err)
	}
	return apperr.Unavailable("", "this daemon keeps no %s", what)
}
