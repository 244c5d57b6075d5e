package guest

import (
	"cmp"
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// The port, branch and tmux watchers look every pollInterval while something happens in
// the sandbox. After quietLooks looks in a row that found nothing new, the wait doubles,
// up to pollIdle: an idle sandbox costs its host a look every few seconds instead of two
// a second, which is what lets hundreds of them sit on one machine. Anything that shows
// activity (a change found, a status an agent's hook wrote, an exec starting) brings the
// wait back to pollInterval and looks at once.
const (
	// releaseLooks: at the idle pace, every releaseLooks-th look also collects the
	// guest's garbage and returns the freed memory to the kernel. The looks' own garbage
	// (a few KiB each) would otherwise pile up for hours until the runtime's first
	// collection at a 4 MiB heap, and stay resident in every idle sandbox.
	releaseLooks = 15
	pollInterval = 500 * time.Millisecond
	pollIdle     = 4 * time.Second
	quietLooks   = 10
)

// watch runs the watchers behind Events.Subscribe until ctx is done: the status files
// (inotify), and the listening ports, the workspace's branches and the sessions' tmux
// server, looked at as the pace above says.
func (s *Server) watch(ctx context.Context, emit func(*guestpb.Event)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	var changed atomic.Bool
	report := func(ev *guestpb.Event) {
		changed.Store(true)
		emit(ev)
	}
	if s.opts.StatusDir != "" {
		wg.Go(func() {
			watchStatus(ctx, s.opts.StatusDir, func(ev *guestpb.Event) {
				emit(ev)
				s.poke()
			}, s.log)
		})
	}
	var ports portState
	var refs refState
	var reaper tmuxReaper
	var control controlState
	proc := cmp.Or(s.opts.Proc, "/proc")
	wait, quiet, idleLooks := pollInterval, 0, 0
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		s.looks.Add(1)
		changed.Store(false)
		ports.scanPorts(proc, s.ownPort, report)
		if s.opts.Workspace != "" {
			refs.scanRefs(s.opts.Workspace, report)
		}
		if s.opts.StatusDir != "" {
			reaper.scan(proc) // so that a session's exit is reported (see tmuxReaper)
		}
		control.scanControl(s.opts.Workspace, controlHome, s.opts.StatusDir, s.isOwnWrite, report)
		if changed.Load() {
			wait, quiet = pollInterval, 0
		} else if quiet++; quiet >= quietLooks {
			wait = min(2*wait, pollIdle)
		}
		if wait < pollIdle {
			idleLooks = 0
		} else if idleLooks++; idleLooks%releaseLooks == 0 {
			debug.FreeOSMemory()
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.pokes:
			wait, quiet = pollInterval, 0
		}
	}
}

// poke tells the watchers something is happening in the sandbox: they look at once and
// then at their quickest pace again.
func (s *Server) poke() {
	select {
	case s.pokes <- struct{}{}:
	default:
	}
}

// addOwnPort records a listener of the guest's own, which the port watcher ignores; the
// returned function forgets it.
func (s *Server) addOwnPort(port int) func() {
	s.mu.Lock()
	s.ownPorts[port]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ownPorts[port]--; s.ownPorts[port] <= 0 {
			delete(s.ownPorts, port)
		}
	}
}

func (s *Server) ownPort(port int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ownPorts[port] > 0
}
