package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/config/cost"
)

// Usage reads what model calls cost: sandbox "" for every sandbox, session "" for all
// of a sandbox's; since "" for all time.
func (c *Client) Usage(ctx context.Context, sandbox, session, since string) (wire.UsageReport, error) {
	v := url.Values{}
	for k, val := range map[string]string{"sandbox": sandbox, "session": session, "since": since} {
		if val != "" {
			v.Set(k, val)
		}
	}
	var out wire.UsageReport
	err := c.Do(ctx, http.MethodGet, "/v1/usage?"+v.Encode(), nil, &out)
	return out, err
}

// Budgets lists the budgets and the config's default.
func (c *Client) Budgets(ctx context.Context) (wire.BudgetList, error) {
	var out wire.BudgetList
	err := c.Do(ctx, http.MethodGet, "/v1/budgets", nil, &out)
	return out, err
}

// SetBudget sets the budget of a sandbox (session "") or of one of its sessions; a
// limit with no bound removes it.
func (c *Client) SetBudget(ctx context.Context, sandbox, session string, l cost.Limit) (wire.Budget, error) {
	body, _ := json.Marshal(wire.BudgetRequest{Session: session, Limit: l})
	var out wire.Budget
	err := c.Do(ctx, http.MethodPut, sandboxPath(sandbox, "/budget"), bytes.NewReader(body), &out)
	return out, err
}
