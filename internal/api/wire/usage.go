package wire

import (
	"github.com/paddockhq/paddock/internal/api/wire/tokens"
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
