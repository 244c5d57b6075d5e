package egress

import (
	"sync"
	"time"
)

// DefaultRepeatWindow is how long identical refusals are folded into the first one when
// Options.RepeatWindow is zero.
const DefaultRepeatWindow = 60 * time.Second

// maxRepeatKeys bounds the refusals remembered at once, so that a sandbox that tries
// endless distinct names cannot grow the daemon's memory; past it, a refusal is treated
// as new (and so logged) rather than remembered.
const maxRepeatKeys = 10000

// repeats remembers, for each kind of refusal (sandbox, status, host and port), when the
// first of the current window was seen. A sandbox can refuse itself thousands of times a
// second; each refusal is answered, but only the first of a window is logged and
// recorded as new.
type repeats struct {
	window time.Duration

	mu        sync.Mutex
	first     map[string]time.Time
	nextSweep time.Time
}

func newRepeats(window time.Duration) *repeats {
	if window <= 0 {
		window = DefaultRepeatWindow
	}
	return &repeats{window: window, first: map[string]time.Time{}}
}

// seen reports whether key was seen less than the window ago, that is, whether this
// occurrence repeats one already reported. An occurrence that is not a repeat opens a new
// window.
func (r *repeats) seen(key string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.first[key]; ok && now.Sub(t) < r.window && !now.Before(t) {
		return true
	}
	if len(r.first) >= maxRepeatKeys {
		if now.Before(r.nextSweep) {
			return false
		}
		for k, t := range r.first {
			if now.Sub(t) >= r.window || now.Before(t) {
				delete(r.first, k)
			}
		}
		r.nextSweep = now.Add(r.window / 4)
		if len(r.first) >= maxRepeatKeys {
			return false
		}
	}
	r.first[key] = now
	return false
}
