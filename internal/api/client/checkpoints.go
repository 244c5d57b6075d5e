package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// Checkpoints lists a sandbox's checkpoints, the oldest first: with session, that
// session's (and those of no session).
func (c *Client) Checkpoints(ctx context.Context, sandboxName, session string) ([]wire.Checkpoint, error) {
	var out []wire.Checkpoint
	path := sandboxPath(sandboxName, "/checkpoints")
	if session != "" {
		path += "?session=" + url.QueryEscape(session)
	}
	err := c.Do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

// TakeCheckpoint takes a checkpoint of a sandbox by hand.
func (c *Client) TakeCheckpoint(ctx context.Context, sandboxName string, req wire.CheckpointRequest) (wire.Checkpoint, error) {
	var out wire.Checkpoint
	err := c.postJSON(ctx, sandboxPath(sandboxName, "/checkpoints"), req, &out)
	return out, err
}

// CheckpointDiff is what changed between two checkpoints of a sandbox (from, to: a
// turn number, #SEQ or a name; from empty: the checkpoint before to), as git diff
// prints it, or its --stat.
func (c *Client) CheckpointDiff(ctx context.Context, sandboxName, session, from, to string, stat bool) (string, error) {
	q := url.Values{}
	if session != "" {
		q.Set("session", session)
	}
	if from != "" {
		q.Set("from", from)
	}
	q.Set("to", to)
	if stat {
		q.Set("stat", "1")
	}
	resp, err := c.stream(ctx, http.MethodGet, sandboxPath(sandboxName, "/checkpoints/diff")+"?"+q.Encode(), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// Rewind puts a session's files and conversation back to a checkpoint.
func (c *Client) Rewind(ctx context.Context, sandboxName, session string, req wire.RewindRequest) (wire.RewindResult, error) {
	var out wire.RewindResult
	err := c.postJSON(ctx, sessionPath(sandboxName, session, "/rewind"), req, &out)
	return out, err
}

// Bisect finds the first turn of a session after which a check fails, reporting
// each step.
func (c *Client) Bisect(ctx context.Context, sandboxName, session string, req wire.BisectRequest, progress func(string)) (wire.BisectResult, error) {
	body, _ := json.Marshal(req)
	resp, err := c.stream(ctx, http.MethodPost, sessionPath(sandboxName, session, "/bisect"), bytes.NewReader(body))
	if err != nil {
		return wire.BisectResult{}, err
	}
	defer resp.Body.Close()
	last, err := readProgress(resp.Body, progress)
	if err != nil || last.Bisect == nil {
		return wire.BisectResult{}, err
	}
	return *last.Bisect, nil
}

// Fork makes new sandboxes from a sandbox's checkpoint, reporting progress.
func (c *Client) Fork(ctx context.Context, sandboxName string, req wire.ForkRequest, progress func(string)) (wire.ForkResult, error) {
	body, _ := json.Marshal(req)
	resp, err := c.stream(ctx, http.MethodPost, sandboxPath(sandboxName, "/fork"), bytes.NewReader(body))
	if err != nil {
		return wire.ForkResult{}, err
	}
	defer resp.Body.Close()
	last, err := readProgress(resp.Body, progress)
	if err != nil || last.Fork == nil {
		return wire.ForkResult{}, err
	}
	return *last.Fork, nil
}
