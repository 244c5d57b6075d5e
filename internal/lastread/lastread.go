// Package lastread bounds how long a listing waits on a slow read (a sandbox's live
// state, its sessions): one that was slow last time is answered at once with what it
// said then, marked stale, while it is read again in the background for the next
// listing. `paddock ls` then costs what it costs without the slow sandbox.
package lastread

import (
	"context"
	"sync"
	"time"
)

// How long Get waits for a read. One whose last read took longer than Slow is slow (an
// emulated VM, a machine under load, a tmux server that does not answer): it gets
// SlowWait, and the others FreshWait, before the last answer is used.
const (
	Slow      = 100 * time.Millisecond
	SlowWait  = 0
	FreshWait = 2 * time.Second
	// readLimit bounds a read left to finish in the background.
	readLimit = 30 * time.Second
)

// Cache holds the last answer of each key's read, and the read under way. The zero
// value is ready for use.
type Cache[T any] struct {
	mu    sync.Mutex
	last  map[string]answer[T]
	reads map[string]*read[T]
}

type answer[T any] struct {
	v    T
	at   time.Time
	took time.Duration
}

type read[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// Get reads key with read, waiting as long as its last read earned; past that it
// returns the last answer with stale set and when it was read, the read going on in
// the background (detached from ctx, for at most 30 s). With no answer yet it waits.
func (c *Cache[T]) Get(ctx context.Context, key string, readFn func(context.Context) (T, error)) (v T, stale bool, at time.Time, err error) {
	c.mu.Lock()
	if c.last == nil {
		c.last, c.reads = map[string]answer[T]{}, map[string]*read[T]{}
	}
	last, seen := c.last[key]
	r, busy := c.reads[key]
	if !busy {
		r = &read[T]{done: make(chan struct{})}
		c.reads[key] = r
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readLimit)
		go func() {
			defer cancel()
			start := time.Now()
			r.v, r.err = readFn(rctx)
			c.mu.Lock()
			// A read Forget dropped while it ran (a start or stop since) tells its own
			// caller only: it is no answer for the next listing.
			if c.reads[key] == r {
				if r.err == nil {
					c.last[key] = answer[T]{v: r.v, at: time.Now(), took: time.Since(start)}
				}
				delete(c.reads, key)
			}
			c.mu.Unlock()
			close(r.done)
		}()
	}
	c.mu.Unlock()
	wait := FreshWait
	if seen && last.took > Slow {
		wait = SlowWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-r.done:
		return r.v, false, time.Now(), r.err
	case <-t.C:
	case <-ctx.Done():
		return v, false, time.Time{}, ctx.Err()
	}
	select {
	case <-r.done: // answered as the wait ended
		return r.v, false, time.Now(), r.err
	default:
	}
	if !seen {
		select { // nothing known yet: this once, the listing waits
		case <-r.done:
			return r.v, false, time.Now(), r.err
		case <-ctx.Done():
			return v, false, time.Time{}, ctx.Err()
		}
	}
	// Slow now, whatever the read says when it ends: the next Get waits less.
	c.mu.Lock()
	if l, ok := c.last[key]; ok && l.took <= Slow {
		l.took = wait
		c.last[key] = l
	}
	c.mu.Unlock()
	return last.v, true, last.at, nil
}

// Forget drops key's last answer and any read under way (a sandbox removed, or changed
// by the daemon itself: the next Get waits for a read that starts after it).
func (c *Cache[T]) Forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.last, key)
	delete(c.reads, key)
}
