package session

import (
	"context"
	"time"
)

// listBounded is List of one sandbox, waiting for it no longer than its last read
// earned (lastread.Cache): past that, the sessions as last read, each marked Stale, while
// the read finishes in the background.
func (s *Service) listBounded(ctx context.Context, id, name string) ([]Info, error) {
	list, stale, at, err := s.known.Get(ctx, id, func(ctx context.Context) ([]Info, error) { return s.List(ctx, name) })
	if err != nil || !stale {
		return list, err
	}
	out := make([]Info, len(list))
	for i, in := range list {
		in.Stale = true
		in.Detail = "as of " + time.Since(at).Round(time.Second).String() + " ago: the sandbox is slow to answer"
		out[i] = in
	}
	return out, nil
}
