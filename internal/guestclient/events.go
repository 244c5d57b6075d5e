package guestclient

import (
	"context"

	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// Events streams what happens inside the sandbox (session statuses and exits, ports,
// branches, and a heartbeat every few seconds: guest.proto lists the kinds) until ctx is
// done, the connection ends or the guest ends the call (a subscriber that fell behind);
// then the channel is closed.
func (c *Client) Events(ctx context.Context) (<-chan *guestpb.Event, error) {
	stream, err := c.events.Subscribe(ctx, &guestpb.SubscribeRequest{})
	if err != nil {
		return nil, translate(ctx, "events", err)
	}
	ch := make(chan *guestpb.Event, 16)
	go func() {
		defer close(ch)
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}
