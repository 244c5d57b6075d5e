package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// StartDeviceLogin starts `paddock login`'s sign-in with GitHub.
func (c *Client) StartDeviceLogin(ctx context.Context) (wire.DeviceStart, error) {
	var out wire.DeviceStart
	err := c.Do(ctx, http.MethodPost, "/v1/auth/device", nil, &out)
	return out, err
}

// PollDeviceLogin asks once whether the user entered the code: see DeviceToken.
func (c *Client) PollDeviceLogin(ctx context.Context, req wire.DeviceTokenRequest) (wire.DeviceToken, error) {
	body, _ := json.Marshal(req)
	var out wire.DeviceToken
	err := c.Do(ctx, http.MethodPost, "/v1/auth/device/token", bytes.NewReader(body), &out)
	return out, err
}
