// Package metering keeps what every sandbox spends on model calls: the credential
// proxy tells it each call's usage, it records them in the state with an estimated
// cost from a price table, and it refuses calls once a budget is spent.
package metering

import (
	"sort"
	"strings"

	"github.com/paddockhq/paddock/internal/config/cost"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/termtext"
	"github.com/paddockhq/paddock/internal/transcript"
)

// Price is what a model costs, in US dollars per million tokens of each kind.
type Price = cost.Price

// costOf is the estimated cost of u at price p.
func costOf(p Price, u transcript.Usage) float64 {
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*p.CacheWrite) / 1e6
}

// DefaultPrices are the providers' published list prices (2025) for their well-known
// models, keyed by model name prefix; the config's [prices."MODEL"] add to and override
// them. They are estimates: providers change prices, and discounts (batch, plans) are
// not known here.
var DefaultPrices = map[string]Price{
	// Anthropic: cache writes are the 5-minute ones (1.25 x input).
	"claude-opus-4-5":   {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	"claude-opus-4-6":   {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	"claude-opus-4":     {Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	"claude-opus":       {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	"claude-sonnet":     {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-3-7-sonnet": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-3-5-sonnet": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-haiku":      {Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
	"claude-3-5-haiku":  {Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1},
	// OpenAI: cached input is read at the cache price; nothing is charged for writes.
	"gpt-5":        {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-5-mini":   {Input: 0.25, Output: 2, CacheRead: 0.025},
	"gpt-5-nano":   {Input: 0.05, Output: 0.4, CacheRead: 0.005},
	"gpt-5-codex":  {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-4.1":      {Input: 2, Output: 8, CacheRead: 0.5},
	"gpt-4.1-mini": {Input: 0.4, Output: 1.6, CacheRead: 0.1},
	"gpt-4o":       {Input: 2.5, Output: 10, CacheRead: 1.25},
	"gpt-4o-mini":  {Input: 0.15, Output: 0.6, CacheRead: 0.075},
	"o3":           {Input: 2, Output: 8, CacheRead: 0.5},
	"o4-mini":      {Input: 1.1, Output: 4.4, CacheRead: 0.275},
	"codex-mini":   {Input: 1.5, Output: 6, CacheRead: 0.375},
	// Google: the prices of prompts up to 200k tokens.
	"gemini-2.5-pro":        {Input: 1.25, Output: 10, CacheRead: 0.31},
	"gemini-2.5-flash":      {Input: 0.3, Output: 2.5, CacheRead: 0.075},
	"gemini-2.5-flash-lite": {Input: 0.1, Output: 0.4, CacheRead: 0.025},
	"gemini-2.0-flash":      {Input: 0.1, Output: 0.4, CacheRead: 0.025},
}

// Prices finds a model's price: the longest prefix of its name that has one, so that
// "claude-sonnet-4-5-20250929" takes the price of "claude-sonnet". A provider's prefix
// on the name ("models/", "anthropic/") is ignored.
type Prices struct {
	keys   []string // longest first
	prices map[string]Price
}

// NewPrices merges the config's prices over the defaults.
func NewPrices(config map[string]Price) (Prices, error) {
	p := Prices{prices: map[string]Price{}}
	for k, v := range DefaultPrices {
		p.prices[k] = v
	}
	if err := cost.CheckPrices(config); err != nil {
		return Prices{}, err
	}
	for k, v := range config {
		p.prices[strings.ToLower(k)] = v
	}
	for k := range p.prices {
		p.keys = append(p.keys, k)
	}
	sort.Slice(p.keys, func(i, j int) bool {
		if len(p.keys[i]) != len(p.keys[j]) {
			return len(p.keys[i]) > len(p.keys[j])
		}
		return p.keys[i] < p.keys[j]
	})
	return p, nil
}

// Of returns the price of model, and false when none is known.
func (p Prices) Of(model string) (Price, bool) {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if m == "" {
		return Price{}, false
	}
	for _, k := range p.keys {
		if strings.HasPrefix(m, k) {
			return p.prices[k], true
		}
	}
	return Price{}, false
}

// CostText is termtext.Cost of a sum of usage ("-" for none).
func CostText(s *store.UsageSum) string {
	if s == nil {
		return termtext.Cost(0, 0, 0)
	}
	return termtext.Cost(s.Requests, s.Unpriced, s.CostUSD)
}
