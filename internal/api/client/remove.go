package client

import (
	"context"
	"net/http"
	"strconv"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// Remove removes a sandbox after a final snapshot (none with req.Purge, nor for a
// sandbox its backend lost), reporting progress; it returns the final snapshot, nil
// when none was taken. A sandbox whose snapshot fails stays.
func (c *Client) Remove(ctx context.Context, name string, req wire.RemoveRequest, progress func(string)) (*wire.SnapshotManifest, error) {
	q := "?force=" + strconv.FormatBool(req.Force) + "&purge=" + strconv.FormatBool(req.Purge)
	resp, err := c.stream(ctx, http.MethodDelete, sandboxPath(name)+q, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	last, err := readProgress(resp.Body, progress)
	return last.Snapshot, err
}
