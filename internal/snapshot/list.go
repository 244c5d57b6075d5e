package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/snapshot/storage"
)

// List returns the snapshots of a sandbox, or of every sandbox when name is "", newest
// first. A manifest the store holds but paddock cannot read is skipped, and logged.
func (s *Service) List(ctx context.Context, name string) ([]Manifest, error) {
	prefix := "snapshots/"
	if name != "" {
		prefix += name + "/"
	}
	keys, err := s.store.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list snapshots in %s: %w", s.store, err)
	}
	var out []Manifest
	for _, k := range keys {
		if !strings.HasSuffix(k, ".json") {
			continue
		}
		m, err := s.read(ctx, k)
		if err != nil {
			s.log.Warn("unreadable snapshot manifest", "key", k, "err", err)
			continue
		}
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Manifest) int { return b.Created.Compare(a.Created) })
	return out, nil
}

func (s *Service) read(ctx context.Context, key string) (*Manifest, error) {
	r, err := s.store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decode %s: %w", key, err)
	}
	for _, b := range blobs(&m) {
		if err := storage.CheckSHA256(b.SHA256); err != nil {
			return nil, fmt.Errorf("%s names a bad blob: %w", key, err)
		}
	}
	return &m, nil
}

// Newest is a sandbox's newest snapshot, nil when it has none.
func (s *Service) Newest(ctx context.Context, name string) (*Manifest, error) {
	ms, err := s.List(ctx, name)
	if err != nil || len(ms) == 0 {
		return nil, err
	}
	return &ms[0], nil
}

// Find is the snapshot ref names: a snapshot id, or a sandbox's name for its newest.
func (s *Service) Find(ctx context.Context, ref string) (*Manifest, error) {
	all, err := s.List(ctx, "")
	if err != nil {
		return nil, err
	}
	for i := range all {
		if all[i].ID == ref {
			return &all[i], nil
		}
	}
	for i := range all { // newest first
		if all[i].Sandbox == ref {
			return &all[i], nil
		}
	}
	return nil, errNoSnapshot(ref)
}

// missing lists the blobs of a snapshot the store does not hold whole.
func (s *Service) missing(ctx context.Context, m *Manifest) []Blob {
	var out []Blob
	seen := map[string]bool{}
	for _, b := range blobs(m) {
		if seen[b.SHA256] {
			continue
		}
		seen[b.SHA256] = true
		if size, err := s.store.Stat(ctx, storage.BlobKey(b.SHA256)); err != nil || size != b.Size {
			out = append(out, b)
		}
	}
	return out
}

// hasBlobs reports whether the store holds every blob of a snapshot (a later one may
// then build on it).
func (s *Service) hasBlobs(ctx context.Context, m *Manifest) bool { return len(s.missing(ctx, m)) == 0 }

// Prune applies the retention to a sandbox's snapshots (every sandbox's when name is
// ""): the newest Keep are kept, and those older than MaxAge go. Then blobs no snapshot
// names any more are removed. It returns the ids removed.
func (s *Service) Prune(ctx context.Context, name string) ([]string, error) {
	all, err := s.List(ctx, name)
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	var removed []string
	for _, m := range all { // newest first
		count[m.Sandbox]++
		old := s.opts.MaxAge > 0 && time.Since(m.Created) > s.opts.MaxAge
		if (s.opts.Keep > 0 && count[m.Sandbox] > s.opts.Keep) || old {
			if err := s.store.Delete(ctx, manifestKey(m.Sandbox, m.ID)); err != nil {
				return removed, err
			}
			removed = append(removed, m.ID)
		}
	}
	if len(removed) > 0 {
		if err := s.collect(ctx); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// collect removes the blobs no snapshot names.
func (s *Service) collect(ctx context.Context) error {
	s.gc.Lock()
	defer s.gc.Unlock()
	all, err := s.List(ctx, "")
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for i := range all {
		for _, b := range blobs(&all[i]) {
			used[storage.BlobKey(b.SHA256)] = true
		}
	}
	keys, err := s.store.List(ctx, "blobs/")
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !used[k] {
			if err := s.store.Delete(ctx, k); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// errNoSnapshot is a snapshot the store does not have.
func errNoSnapshot(ref string) error {
	return apperr.NotFound("list them with `paddock snapshots`", "no snapshot %q", ref)
}
