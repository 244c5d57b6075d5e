package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// NoteMerge tells the sandbox's flight record of a merge done on the host.
func (c *Client) NoteMerge(ctx context.Context, sandbox string, n wire.MergeNote) error {
	return c.postJSON(ctx, sandboxPath(sandbox, "/merges"), n, nil)
}

// Record reads a sandbox's flight record, only a session's entries when session is
// not empty.
func (c *Client) Record(ctx context.Context, sandbox, session string) ([]wire.RecordEntry, error) {
	v := url.Values{}
	if session != "" {
		v.Set("session", session)
	}
	var out []wire.RecordEntry
	err := c.Do(ctx, http.MethodGet, "/v1/sandboxes/"+url.PathEscape(sandbox)+"/record?"+v.Encode(), nil, &out)
	return out, err
}

// VerifyRecords verifies a sandbox's flight record, or every record ("", admins).
func (c *Client) VerifyRecords(ctx context.Context, sandbox string) ([]wire.RecordReport, error) {
	v := url.Values{}
	if sandbox != "" {
		v.Set("sandbox", sandbox)
	}
	var out []wire.RecordReport
	err := c.Do(ctx, http.MethodGet, "/v1/records/verify?"+v.Encode(), nil, &out)
	return out, err
}
