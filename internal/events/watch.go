package events

import "context"

// Watch calls fn with each event of bus that match accepts, one at a time, until ctx
// ends. A subscription that falls behind is replaced by a new one; subscribed, when set,
// is called each time one starts listening, before its first event, to look at what
// may have been missed meanwhile.
func Watch(ctx context.Context, bus *Bus, match func(Event) bool, subscribed func(), fn func(Event)) {
	for ctx.Err() == nil {
		sub := bus.Subscribe(0, match)
		if subscribed != nil {
			subscribed()
		}
		follow(ctx, sub, fn)
		sub.Close()
	}
}

// follow calls fn with sub's events until sub is dropped or closed, or ctx ends.
func follow(ctx context.Context, sub *Subscription, fn func(Event)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Dropped():
			return
		case ev, ok := <-sub.C():
			if !ok {
				return
			}
			fn(ev)
		}
	}
}
