package session

import (
	"context"
	"sync"
	"time"
)

// How long a listing of every sandbox's sessions waits for one sandbox's live read.
// One whose last read took longer than slowRead is slow (an emulated VM, a machine
// under load, a tmux server that does not answer): it gets slowWait (none: ls then
// costs what it costs without it), and the others freshWait. Past its wait, the
// listing shows what the last read said, marked Stale, and the read goes on in the
// background for the next listing.
const (
	slowRead  = 100 * time.Millisecond
	slowWait  = 0
	freshWait = 2 * time.Second
	// readLimit bounds a read left to finish in the background.
	readLimit = 30 * time.Second
)

// known is what the last live read of each sandbox's sessions said, by sandbox ID, and
// the read under way, if any.
type known struct {
	mu    sync.Mutex
	lists map[string]knownList
	reads map[string]*read
}

type knownList struct {
	list []Info
	at   time.Time
	took time.Duration
}

// read is a live read of a sandbox's sessions under way; done closes when it ends.
type read struct {
	done chan struct{}
	list []Info
	err  error
}

// listBounded is List of one sandbox, waiting no longer for it than its last read
// earned; past that, the sessions as last read, each marked Stale (none when never
// read), while the read finishes in the background.
func (s *Service) listBounded(ctx context.Context, id, name string) ([]Info, error) {
	k := &s.known
	k.mu.Lock()
	if k.lists == nil {
		k.lists, k.reads = map[string]knownList{}, map[string]*read{}
	}
	last, seen := k.lists[id]
	r, busy := k.reads[id]
	if !busy {
		r = &read{done: make(chan struct{})}
		k.reads[id] = r
		// Detached from the request: a read that outlives its listing serves the next.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readLimit)
		go func() {
			defer cancel()
			start := time.Now()
			r.list, r.err = s.List(rctx, name)
			k.mu.Lock()
			if r.err == nil {
				k.lists[id] = knownList{list: r.list, at: time.Now(), took: time.Since(start)}
			}
			delete(k.reads, id)
			k.mu.Unlock()
			close(r.done)
		}()
	}
	k.mu.Unlock()
	wait := freshWait
	if seen && last.took > slowRead {
		wait = slowWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-r.done:
		return r.list, r.err
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-r.done: // answered as the wait ended
		return r.list, r.err
	default:
	}
	if !seen {
		<-r.done // nothing known yet: this once, the listing waits
		return r.list, r.err
	}
	// Slow now, whatever the read says when it ends: the next listing waits less.
	k.mu.Lock()
	if l, ok := k.lists[id]; ok && l.took <= slowRead {
		l.took = wait
		k.lists[id] = l
	}
	k.mu.Unlock()
	out := make([]Info, len(last.list))
	for i, in := range last.list {
		in.Stale = true
		in.Detail = "as of " + time.Since(last.at).Round(time.Second).String() + " ago: the sandbox is slow to answer"
		out[i] = in
	}
	return out, nil
}
