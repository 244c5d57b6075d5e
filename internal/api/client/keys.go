package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// Providers lists the credential proxy's model providers and where their keys come from.
func (c *Client) Providers(ctx context.Context) ([]wire.ProviderInfo, error) {
	var out []wire.ProviderInfo
	err := c.Do(ctx, http.MethodGet, "/v1/providers", nil, &out)
	return out, err
}

// SetKey gives the daemon provider's key ("" removes the one `SetKey` kept).
func (c *Client) SetKey(ctx context.Context, provider, key string) (wire.ProviderInfo, error) {
	var out wire.ProviderInfo
	path := "/v1/providers/" + url.PathEscape(provider) + "/key"
	if key == "" {
		err := c.Do(ctx, http.MethodDelete, path, nil, &out)
		return out, err
	}
	body, _ := json.Marshal(wire.KeyRequest{Key: key})
	err := c.Do(ctx, http.MethodPut, path, bytes.NewReader(body), &out)
	return out, err
}
