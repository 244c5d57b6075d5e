package netpolicy

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

// pendingDenial is the repeats of one denial since it was last written.
type pendingDenial struct {
	rec     store.NetDenial // the last repeat, with Count the repeats since the last write
	written time.Time
}

// RecordDenial keeps a refused egress request (egress.Options.OnDenial) for `paddock net denials`. A new one is
// written at once, with an event; a repeat of a recent one (see egress.Denial) is counted
// against it, written at most once a second per destination and before any listing.
func (p *Rules) RecordDenial(d egress.Denial) {
	ctx := context.Background()
	sb, err := p.opts.Store.GetSandbox(ctx, d.Sandbox)
	if err != nil {
		return
	}
	rec := store.NetDenial{Time: d.Time, SandboxID: sb.ID, Host: d.Host, Port: d.Port, Reason: d.Reason, Count: 1}
	key := denialKey{sb.ID, d.Host, d.Port}
	pd := &p.denials
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.m == nil {
		pd.m = map[denialKey]*pendingDenial{}
	}
	pend := pd.m[key]
	if d.Repeat {
		if pend == nil {
			if len(pd.m) >= maxPendingDenials {
				if err := p.flushLocked(ctx); err != nil {
					p.log.Error("count an egress denial", "sandbox", d.Sandbox, "err", err)
				}
			}
			pend = &pendingDenial{written: d.Time}
			pd.m[key] = pend
		}
		rec.Count += pend.rec.Count
		pend.rec = rec
		if d.Time.Sub(pend.written) < denialFlushEvery {
			return
		}
		delete(pd.m, key)
		if err := p.opts.Store.RepeatNetDenial(ctx, rec); err != nil {
			p.log.Error("count an egress denial", "sandbox", d.Sandbox, "err", err)
		}
		return
	}
	if pend != nil {
		// Repeats of the window that just ended belong to the denial before this one.
		delete(pd.m, key)
		if err := p.opts.Store.RepeatNetDenial(ctx, pend.rec); err != nil {
			p.log.Error("count an egress denial", "sandbox", d.Sandbox, "err", err)
		}
	}
	if err := p.opts.Store.AddNetDenial(ctx, rec); err != nil {
		p.log.Error("record an egress denial", "sandbox", d.Sandbox, "err", err)
	}
	p.opts.Sandboxes.Emit(ctx, sb, events.Event{Kind: "egress-denied", Detail: fmt.Sprintf("%s:%d: %s", d.Host, d.Port, d.Reason),
		Attrs: map[string]string{"host": d.Host, "port": strconv.Itoa(d.Port), "reason": d.Reason}})
}

// Flush writes every repeat of a denial, and every request learned, not written yet.
func (p *Rules) Flush(ctx context.Context) error {
	p.flushLearned(ctx)
	p.denials.mu.Lock()
	defer p.denials.mu.Unlock()
	return p.flushLocked(ctx)
}

// flushLocked is Flush with p.denials.mu held.
func (p *Rules) flushLocked(ctx context.Context) error {
	pd := &p.denials
	for key, pend := range pd.m {
		if err := p.opts.Store.RepeatNetDenial(ctx, pend.rec); err != nil {
			return fmt.Errorf("count egress denials: %w", err)
		}
		delete(pd.m, key)
	}
	return nil
}
