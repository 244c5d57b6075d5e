package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// Tokens lists the API tokens.
func (c *Client) Tokens(ctx context.Context) ([]wire.TokenInfo, error) {
	var out []wire.TokenInfo
	err := c.Do(ctx, http.MethodGet, "/v1/tokens", nil, &out)
	return out, err
}

// CreateToken makes a token; the answer holds its secret, shown this once.
func (c *Client) CreateToken(ctx context.Context, req wire.TokenRequest) (wire.NewToken, error) {
	body, _ := json.Marshal(req)
	var out wire.NewToken
	err := c.Do(ctx, http.MethodPost, "/v1/tokens", bytes.NewReader(body), &out)
	return out, err
}

// RevokeToken deletes a token: requests with it are refused from then on.
func (c *Client) RevokeToken(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/tokens/"+url.PathEscape(name), nil, nil)
}
