package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// Audit reads the audit log: entries since a time ("" : all kept; a duration back
// such as 24h, or a time), at most limit of the newest (0: all).
func (c *Client) Audit(ctx context.Context, since string, limit int) ([]wire.AuditEntry, error) {
	v := url.Values{}
	if since != "" {
		v.Set("since", since)
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	var out []wire.AuditEntry
	err := c.Do(ctx, http.MethodGet, "/v1/audit?"+v.Encode(), nil, &out)
	return out, err
}

// Users lists the users signed in with GitHub, with their tokens.
func (c *Client) Users(ctx context.Context) ([]wire.UserInfo, error) {
	var out []wire.UserInfo
	err := c.Do(ctx, http.MethodGet, "/v1/users", nil, &out)
	return out, err
}

// Me says who the client's credential stands for.
func (c *Client) Me(ctx context.Context) (wire.UserInfo, error) {
	var out wire.UserInfo
	err := c.Do(ctx, http.MethodGet, "/v1/me", nil, &out)
	return out, err
}
