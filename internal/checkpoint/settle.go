package checkpoint

import (
	"context"
	"time"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/transcript"
)

// How long a turn's checkpoint waits for the agent's transcript: until it has been
// still for settleQuiet with the agent's answer last, polled every settlePoll, for at
// most settleWait (10 s was not enough for Claude Code's last write on a machine loaded
// by a whole test run).
const (
	settleQuiet = time.Second
	settlePoll  = 250 * time.Millisecond
	settleWait  = 30 * time.Second
)

// settle waits until the session's transcript holds the whole turn its agent just said
// it ended. Agents write their transcript a moment after their hooks report (Claude
// Code flushes it on a timer): taken at once, the checkpoint of a short turn held the
// turn before it, without this turn's prompt or answer, and a rewind to it lost them.
// It waits until the transcript's last entry is the agent's (an answer or an error) and
// the transcript has not changed for settleQuiet, at most settleWait; a session whose
// transcript paddock cannot read is not waited for, nor one whose agent went back to
// work meanwhile.
func (s *Service) settle(ctx context.Context, sandboxName, sessionName string) {
	if s.opts.Sessions == nil {
		return
	}
	key := sandboxName + "/" + sessionName
	deadline := time.Now().Add(settleWait)
	var (
		last  []transcript.Entry
		since time.Time
	)
	for {
		entries, err := s.opts.Sessions.Transcript(ctx, sandboxName, sessionName)
		now := time.Now()
		switch k := apperr.KindOf(err); {
		case err == nil:
		case k == apperr.KindNotFound || k == apperr.KindInvalid:
			return // no transcript paddock can read: nothing to wait for
		case now.After(deadline):
			return
		default:
			// A read that failed (a sandbox slow to answer on a loaded machine) is
			// tried again, as long as the wait lasts.
			select {
			case <-ctx.Done():
				return
			case <-time.After(settlePoll):
			}
			continue
		}
		if last == nil || !sameTail(entries, last) {
			last, since = entries, now
		}
		if answered(entries) && now.Sub(since) >= settleQuiet || now.After(deadline) || s.worksAgain(key) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(settlePoll):
		}
	}
}

// worksAgain says whether the session's agent was seen at work since its turn ended.
func (s *Service) worksAgain(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.worked[key]
}

// answered says whether a transcript ends with the agent's word: an answer or an error.
func answered(entries []transcript.Entry) bool {
	if len(entries) == 0 {
		return false
	}
	k := entries[len(entries)-1].Kind
	return k == transcript.KindAssistant || k == transcript.KindError
}

// sameTail says whether two readings of a transcript are the same: as many entries,
// the last alike.
func sameTail(a, b []transcript.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	x, y := a[len(a)-1], b[len(b)-1]
	return x.Kind == y.Kind && x.Text == y.Text && x.Output == y.Output && x.Time.Equal(y.Time)
}
