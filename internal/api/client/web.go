package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// Web says whether and where the daemon serves the API over TCP.
func (c *Client) Web(ctx context.Context) (wire.WebStatus, error) {
	var out wire.WebStatus
	err := c.Do(ctx, http.MethodGet, "/v1/web", nil, &out)
	return out, err
}

// ServeWeb asks the daemon to serve the API over TCP; the answer has a login URL.
func (c *Client) ServeWeb(ctx context.Context, req wire.WebRequest) (wire.WebStatus, error) {
	body, _ := json.Marshal(req)
	var out wire.WebStatus
	err := c.Do(ctx, http.MethodPut, "/v1/web", bytes.NewReader(body), &out)
	return out, err
}

// StopWeb asks the daemon to stop serving the API over TCP and sign every browser out.
func (c *Client) StopWeb(ctx context.Context) (wire.WebStatus, error) {
	var out wire.WebStatus
	err := c.Do(ctx, http.MethodDelete, "/v1/web", nil, &out)
	return out, err
}

// WebLogin makes a new one-time login URL for the TCP listener.
func (c *Client) WebLogin(ctx context.Context) (wire.WebStatus, error) {
	var out wire.WebStatus
	err := c.Do(ctx, http.MethodPost, "/v1/web/login", nil, &out)
	return out, err
}
