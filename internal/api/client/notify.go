package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// NotifyStatus reads GET /v1/notify.
func (c *Client) NotifyStatus(ctx context.Context) (wire.NotifyStatus, error) {
	var out wire.NotifyStatus
	err := c.Do(ctx, http.MethodGet, "/v1/notify", nil, &out)
	return out, err
}

// Subscribe stores a browser's push subscription and returns its id.
func (c *Client) Subscribe(ctx context.Context, req wire.PushSubscriptionRequest) (int64, error) {
	body, _ := json.Marshal(req)
	var out struct {
		ID int64 `json:"id"`
	}
	err := c.Do(ctx, http.MethodPost, "/v1/notify/subscriptions", bytes.NewReader(body), &out)
	return out.ID, err
}

// RemoveNotifyTarget removes a push subscription by id.
func (c *Client) RemoveNotifyTarget(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/notify/targets/"+url.PathEscape(id), nil, nil)
}

// TestNotify sends a test notification to every target and says how each went.
func (c *Client) TestNotify(ctx context.Context) ([]wire.NotifyResult, error) {
	var out []wire.NotifyResult
	err := c.Do(ctx, http.MethodPost, "/v1/notify/test", nil, &out)
	return out, err
}
