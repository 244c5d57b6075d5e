package firecracker

import "context"

// Do is a raw call, for tests of the fake's refusals.
func Do(ctx context.Context, c *Client, method, path string, body any) error {
	return c.call(ctx, method, path, body, nil)
}
