package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// StartRun runs a prompt on a sandbox (id empty) or continues run id, passing each event
// to fn, and returns the run as it ended. Cancelling ctx stops following, not the run.
func (c *Client) StartRun(ctx context.Context, sandbox, id string, req wire.RunRequest, fn func(wire.RunEvent)) (wire.Run, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return wire.Run{}, err
	}
	path := sandboxPath(sandbox, "/runs")
	if id != "" {
		path = "/v1/runs/" + url.PathEscape(id) + "/messages"
	}
	return c.readRun(ctx, http.MethodPost, path, bytes.NewReader(body), fn)
}

// FollowRun streams the events of a run at work until it finishes.
func (c *Client) FollowRun(ctx context.Context, id string, fn func(wire.RunEvent)) (wire.Run, error) {
	return c.readRun(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id)+"/follow", http.NoBody, fn)
}

func (c *Client) readRun(ctx context.Context, method, path string, body io.Reader, fn func(wire.RunEvent)) (wire.Run, error) {
	resp, err := c.stream(ctx, method, path, body)
	if err != nil {
		return wire.Run{}, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev wire.RunLine
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return wire.Run{}, fmt.Errorf("bad line from the daemon: %q", sc.Text())
		}
		if ev.Error != nil {
			return wire.Run{}, fromBody(*ev.Error)
		}
		if fn != nil {
			fn(ev.RunEvent)
		}
		if ev.Type == "finished" && ev.Run != nil {
			return *ev.Run, nil
		}
	}
	if err := sc.Err(); err != nil {
		return wire.Run{}, err
	}
	return wire.Run{}, errors.New("the daemon ended the run's stream before the run ended: `paddock run show` says where it stands")
}

// Runs lists runs, newest first; of one sandbox when name is not empty.
func (c *Client) Runs(ctx context.Context, sandbox string) ([]wire.Run, error) {
	var out []wire.Run
	q := ""
	if sandbox != "" {
		q = "?sandbox=" + url.QueryEscape(sandbox)
	}
	return out, c.Do(ctx, http.MethodGet, "/v1/runs"+q, nil, &out)
}

// Run returns a run and its steps.
func (c *Client) Run(ctx context.Context, id string) (wire.RunDetail, error) {
	var out wire.RunDetail
	return out, c.Do(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id), nil, &out)
}

// CancelRun stops a run at work and returns it as recorded.
func (c *Client) CancelRun(ctx context.Context, id string) (wire.Run, error) {
	var out wire.Run
	return out, c.Do(ctx, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+"/cancel", nil, &out)
}
