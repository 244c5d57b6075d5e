package guest

import (
	"context"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// pollInterval is how often the guest looks at listening ports and branches.
const pollInterval = 500 * time.Millisecond

// watch runs the watchers behind Events.Subscribe until ctx is done: the status files
// (inotify), and every pollInterval the listening ports, the workspace's branches and the
// sessions' tmux server.
func (s *Server) watch(ctx context.Context, emit func(*guestpb.Event)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if s.opts.StatusDir != "" {
		wg.Go(func() { watchStatus(ctx, s.opts.StatusDir, emit, s.log) })
	}
	var ports portState
	var refs refState
	var reaper tmuxReaper
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		ports.scanPorts("/proc", s.ownPort, emit)
		if s.opts.Workspace != "" {
			refs.scanRefs(s.opts.Workspace, emit)
		}
		if s.opts.StatusDir != "" {
			reaper.scan("/proc") // so that a session's exit is reported (see tmuxReaper)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
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
