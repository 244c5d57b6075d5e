package wire

import (
	"time"

	"github.com/paddockhq/paddock/internal/api/wire/tokens"
	"github.com/paddockhq/paddock/internal/config/cost"
	"github.com/paddockhq/paddock/internal/termtext"
)

// UsageSum is the usage of many model requests together: a sandbox's or a session's
// (SandboxInfo.Usage, SessionInfo.Usage), a budget's spending, a usage report's rows.
type UsageSum struct {
	Requests int64 `json:"requests"`
	tokens.Usage
	// CostUSD is an estimate: see Unpriced.
	CostUSD float64 `json:"cost_usd"`
	// Unpriced counts the requests to models without a known price, whose cost is not
	// in CostUSD.
	Unpriced int64 `json:"unpriced_requests,omitempty"`
}

// Add adds o to s.
func (s *UsageSum) Add(o UsageSum) {
	s.Requests += o.Requests
	s.Usage.Add(o.Usage)
	s.CostUSD += o.CostUSD
	s.Unpriced += o.Unpriced
}

// CostText is termtext.Cost of a sum of usage ("-" for none).
func CostText(s *UsageSum) string {
	if s == nil {
		return termtext.Cost(0, 0, 0)
	}
	return termtext.Cost(s.Requests, s.Unpriced, s.CostUSD)
}

// UsageGroup is the usage of one sandbox's session with one model.
type UsageGroup struct {
	Sandbox  string `json:"sandbox"`
	Session  string `json:"session,omitempty"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	UsageSum
}

// Budget is a budget as the API shows it: whose, its bound, and what was spent.
type Budget struct {
	Sandbox string `json:"sandbox"`
	Session string `json:"session,omitempty"`
	cost.Limit
	// Default is true for a sandbox under the config's default budget.
	Default bool     `json:"default,omitempty"`
	Spent   UsageSum `json:"spent"`
}

// UsageReport is the answer of GET /v1/usage.
type UsageReport struct {
	// Since is the start of the period, zero for all time.
	Since time.Time `json:"since,omitzero"`
	// Groups are sums by sandbox, session, provider and model, the oldest first.
	Groups []UsageGroup `json:"groups"`
	Total  UsageSum     `json:"total"`
	// Estimate is always true: costs come from a price table, not from the providers' bills.
	Estimate bool `json:"estimate"`
}

// BudgetList is the answer of GET /v1/budgets.
type BudgetList struct {
	// Default is the config's budget of every sandbox without its own.
	Default  cost.Limit `json:"default"`
	Budgets  []Budget   `json:"budgets"`
	Estimate bool       `json:"estimate"`
}

// BudgetRequest is the body of PUT /v1/sandboxes/{name}/budget: the sandbox's own
// budget, or one of its sessions'. No bound at all removes it.
type BudgetRequest struct {
	Session string `json:"session,omitempty"`
	cost.Limit
}
