package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/events"
)

// Suspend stops a running sandbox with its memory saved (`paddock stop --suspend`):
// Start resumes its processes where they were. A backend that cannot (every one but
// the microvm backend's QEMU VMs) is refused before anything changes.
func (s *Service) Suspend(ctx context.Context, name string) (Info, error) {
	sb, err := s.record(ctx, name)
	if err != nil {
		return Info{}, err
	}
	defer s.lock(sb.ID)()
	b, err := s.backendOf(sb)
	if err != nil {
		return Info{}, err
	}
	hint := fmt.Sprintf("stop it without its memory: `paddock stop %s`", name)
	sus, ok := b.(backend.Suspender)
	if !ok || b.Describe().Suspend == "" {
		return Info{}, apperr.Invalid(hint+" (only "+suspendable()+" can be suspended)",
			"the %s backend cannot suspend a sandbox; %s is unchanged", b.Name(), name)
	}
	st, err := b.State(ctx, backend.ID(sb.ID))
	if err != nil {
		return Info{}, err
	}
	if st.State != backend.StateRunning {
		return Info{}, apperr.Conflict(fmt.Sprintf("start it with `paddock start %s`", name),
			"sandbox %q is not running (%s): only a running sandbox can be suspended", name, st.State)
	}
	s.dropClient(sb.ID)
	if err := sus.Suspend(ctx, backend.ID(sb.ID)); err != nil {
		if errors.Is(err, backend.ErrNotSupported) {
			return Info{}, apperr.Invalid(hint, "sandbox %q cannot be suspended: %v", name, err)
		}
		return Info{}, fmt.Errorf("suspend sandbox %q: %w", name, err)
	}
	sb.State, sb.Detail = string(backend.StateSuspended), ""
	if err := s.opts.Store.UpdateSandbox(ctx, sb); err != nil {
		return Info{}, err
	}
	s.Emit(ctx, sb, events.Event{Kind: "suspended"})
	return s.info(ctx, sb), nil
}

// suspendable says, for the user, which sandboxes can be suspended, from the backends'
// descriptions: "the microvm backend's QEMU VMs".
func suspendable() string {
	var which []string
	for _, n := range backend.NamesWhere(func(d backend.Description) bool { return d.Suspend != "" }) {
		d, _ := backend.Registered(n)
		which = append(which, "the "+n+" backend's "+d.Suspend)
	}
	return strings.Join(which, " and ")
}
