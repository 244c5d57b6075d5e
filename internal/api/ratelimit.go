package api

import (
	"net"
	"sync"
	"time"
)

// limiter is a token bucket per remote address for failed authentication: each failure
// takes a token, tokens come back one per refill up to burst, and an address with none
// left is refused before its credentials are even looked at, so that guessing cannot go
// faster than the refill (and a right guess is not told apart from a wrong one).
type limiter struct {
	burst  float64
	refill time.Duration
	// max bounds the addresses remembered; beyond it, new addresses share one bucket.
	max int

	mu      sync.Mutex
	buckets map[string]bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter(burst int, refill time.Duration) *limiter {
	return &limiter{burst: float64(burst), refill: refill, max: 65536, buckets: map[string]bucket{}}
}

// limiterKey is the bucket of a remote address: the address itself for IPv4, its /64
// for IPv6, where one host commonly holds a whole /64.
func limiterKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() != nil {
		return host
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

func (l *limiter) level(b bucket, now time.Time) float64 {
	return min(l.burst, b.tokens+float64(now.Sub(b.at))/float64(l.refill))
}

// wait says how long key must wait before its next attempt: 0 when it may try now.
func (l *limiter) wait(key string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[l.slot(key)]
	if !ok {
		return 0
	}
	t := l.level(b, now)
	if t >= 1 {
		return 0
	}
	return time.Duration((1 - t) * float64(l.refill))
}

// fail takes a token from key's bucket for a failed attempt.
func (l *limiter) fail(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.buckets[key]; !ok && len(l.buckets) >= l.max {
		l.prune(now)
	}
	key = l.slot(key)
	b, ok := l.buckets[key]
	if !ok {
		b = bucket{tokens: l.burst, at: now}
	}
	l.buckets[key] = bucket{tokens: max(0, l.level(b, now)-1), at: now}
}

// slot is the bucket key uses: its own, or the shared one when the table is full.
func (l *limiter) slot(key string) string {
	if _, ok := l.buckets[key]; ok || len(l.buckets) < l.max {
		return key
	}
	return "(overflow)"
}

// prune forgets the addresses whose buckets have filled up again.
func (l *limiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if l.level(b, now) >= l.burst {
			delete(l.buckets, k)
		}
	}
}
