package agentclient

import (
	"context"

	"github.com/paddockhq/paddock/internal/agentproto/agentpb"
)

// Events streams what happens inside the sandbox (for now a heartbeat every few
// seconds) until ctx is done or the connection ends; then the channel is closed.
func (c *Client) Events(ctx context.Context) (<-chan *agentpb.Event, error) {
	stream, err := c.events.Subscribe(ctx, &agentpb.SubscribeRequest{})
	if err != nil {
		return nil, translate(ctx, "events", err)
	}
	ch := make(chan *agentpb.Event, 16)
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
