package sandbox

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/proxy/egress"
	"github.com/paddockhq/paddock/internal/store"
)

// denialFlushEvery is how often the repeats of one denial are written: a sandbox can be
// refused thousands of times a second, and a database write each would grow the
// database's journal by megabytes.
const denialFlushEvery = time.Second

// maxPendingDenials bounds the destinations whose repeats wait to be written: past it,
// all are written, so that endless distinct destinations cannot grow the daemon's memory.
const maxPendingDenials = 1000

// denialKey is one destination refused to one sandbox.
type denialKey struct {
	sandboxID, host string
	port            int
}

// pendingDenials are repeats of recent denials not written yet.
type pendingDenials struct {
	mu sync.Mutex
	m  map[denialKey]*pendingDenial
}

type pendingDenial struct {
	rec     store.NetDenial // the last repeat, with Count the repeats since the last write
	written time.Time
}

// recordDenial keeps a refused egress request for `paddock net denials`. A new one is
// written at once, with an event; a repeat of a recent one (see egress.Denial) is counted
// against it, written at most once a second per destination and before any listing.
func (s *Service) recordDenial(d egress.Denial) {
	ctx := context.Background()
	sb, err := s.opts.Store.GetSandbox(ctx, d.Sandbox)
	if err != nil {
		return
	}
	rec := store.NetDenial{Time: d.Time, SandboxID: sb.ID, Host: d.Host, Port: d.Port, Reason: d.Reason, Count: 1}
	key := denialKey{sb.ID, d.Host, d.Port}
	p := &s.denials
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[denialKey]*pendingDenial{}
	}
	pend := p.m[key]
	if d.Repeat {
		if pend == nil {
			if len(p.m) >= maxPendingDenials {
				if err := s.flushDenialsLocked(ctx); err != nil {
					s.log.Error("count an egress denial", "sandbox", d.Sandbox, "err", err)
				}
			}
			pend = &pendingDenial{written: d.Time}
			p.m[key] = pend
		}
		rec.Count += pend.rec.Count
		pend.rec = rec
		if d.Time.Sub(pend.written) < denialFlushEvery {
			return
		}
		delete(p.m, key)
		if err := s.opts.Store.RepeatNetDenial(ctx, rec); err != nil {
			s.log.Error("count an egress denial", "sandbox", d.Sandbox, "err", err)
		}
		return
	}
	if pend != nil {
		// Repeats of the window that just ended belong to the denial before this one.
		delete(p.m, key)
		if err := s.opts.Store.RepeatNetDenial(ctx, pend.rec); err != nil {
			s.log.Error("count an egress denial", "sandbox", d.Sandbox, "err", err)
		}
	}
	if err := s.opts.Store.AddNetDenial(ctx, rec); err != nil {
		s.log.Error("record an egress denial", "sandbox", d.Sandbox, "err", err)
	}
	s.Emit(ctx, sb, events.Event{Kind: "egress-denied", Detail: fmt.Sprintf("%s:%d: %s", d.Host, d.Port, d.Reason),
		Attrs: map[string]string{"host": d.Host, "port": strconv.Itoa(d.Port), "reason": d.Reason}})
}

// flushDenials writes every repeat not written yet.
func (s *Service) flushDenials(ctx context.Context) error {
	s.denials.mu.Lock()
	defer s.denials.mu.Unlock()
	return s.flushDenialsLocked(ctx)
}

// flushDenialsLocked is flushDenials with s.denials.mu held.
func (s *Service) flushDenialsLocked(ctx context.Context) error {
	p := &s.denials
	for key, pend := range p.m {
		if err := s.opts.Store.RepeatNetDenial(ctx, pend.rec); err != nil {
			return fmt.Errorf("count egress denials: %w", err)
		}
		delete(p.m, key)
	}
	return nil
}
