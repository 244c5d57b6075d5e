package daemon

import (
	"context"
	"log/slog"
	"os"

	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/snapshot"
	"github.com/paddockhq/paddock/internal/snapshot/storage"
)

// openSnapshots opens the [backup] store. A store that cannot be opened (a bucket that
// does not answer, keys missing) does not stop the daemon: snapshots answer with the
// reason until it is fixed.
func openSnapshots(ctx context.Context, b config.Backup, p config.Paths, svc *sandbox.Service, sessions *session.Service, log *slog.Logger) (*snapshot.Service, error) {
	opts := storage.S3Options{Endpoint: b.Endpoint, Region: b.Region}
	if b.S3() {
		keys, err := b.Keys(ctx, os.Getenv)
		if err != nil {
			log.Error("snapshots are off", "err", err)
			return nil, err
		}
		opts.AccessKey, opts.SecretKey = keys.Access, keys.Secret
	}
	st, err := storage.Open(ctx, b.Location(p), opts)
	if err != nil {
		log.Error("snapshots are off: the store does not open", "store", b.Location(p), "err", err)
		return nil, err
	}
	return snapshot.New(svc, sessions, st, snapshot.Options{Keep: b.Keep, MaxAge: b.MaxAge.Duration,
		MaxFileBytes: int64(b.MaxFileMB) << 20, MaxWholeBytes: int64(b.MaxWholeMB) << 20}, log.With("part", "snapshots")), nil
}
