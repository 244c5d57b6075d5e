package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// TakeSnapshot snapshots a sandbox, reporting progress.
func (c *Client) TakeSnapshot(ctx context.Context, name string, req wire.SnapshotRequest, progress func(string)) (*wire.SnapshotManifest, error) {
	body, _ := json.Marshal(req)
	resp, err := c.stream(ctx, http.MethodPost, sandboxPath(name, "/snapshots"), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	last, err := readProgress(resp.Body, progress)
	return last.Snapshot, err
}

// Snapshots lists the snapshots of a sandbox (every sandbox's with ""), newest first.
func (c *Client) Snapshots(ctx context.Context, sandbox string) ([]wire.SnapshotManifest, error) {
	var out []wire.SnapshotManifest
	err := c.Do(ctx, http.MethodGet, "/v1/snapshots?sandbox="+url.QueryEscape(sandbox), nil, &out)
	return out, err
}

// PruneSnapshots applies the retention now.
func (c *Client) PruneSnapshots(ctx context.Context, sandbox string) ([]string, error) {
	var out wire.PruneResult
	err := c.Do(ctx, http.MethodPost, "/v1/snapshots/prune?sandbox="+url.QueryEscape(sandbox), nil, &out)
	return out.Removed, err
}

// RestoreSnapshot makes a new sandbox from a snapshot, reporting progress.
func (c *Client) RestoreSnapshot(ctx context.Context, ref string, req wire.RestoreRequest, progress func(string)) (*wire.SnapshotManifest, error) {
	body, _ := json.Marshal(req)
	resp, err := c.stream(ctx, http.MethodPost, "/v1/snapshots/"+url.PathEscape(ref)+"/restore", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	last, err := readProgress(resp.Body, progress)
	return last.Snapshot, err
}
