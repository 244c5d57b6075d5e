package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// Logins says what the daemon knows of each subscription login (never a token).
func (c *Client) Logins(ctx context.Context) ([]wire.LoginStatus, error) {
	var out []wire.LoginStatus
	err := c.Do(ctx, http.MethodGet, "/v1/logins", nil, &out)
	return out, err
}

// SetLogin gives the daemon a subscription login.
func (c *Client) SetLogin(ctx context.Context, name string, req wire.LoginRequest) (wire.LoginStatus, error) {
	var out wire.LoginStatus
	body, _ := json.Marshal(req)
	err := c.Do(ctx, http.MethodPut, "/v1/logins/"+url.PathEscape(name), bytes.NewReader(body), &out)
	return out, err
}

// RemoveLogin makes the daemon forget a subscription login.
func (c *Client) RemoveLogin(ctx context.Context, name string) (wire.LoginStatus, error) {
	var out wire.LoginStatus
	err := c.Do(ctx, http.MethodDelete, "/v1/logins/"+url.PathEscape(name), nil, &out)
	return out, err
}
