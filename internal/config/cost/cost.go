// Package cost holds what the config says of money: the price of a model's tokens
// ([prices]) and a budget's bounds ([budget]). It is a leaf, so that the config can be
// read without the meter that applies them (internal/metering) and its state.
package cost

import "fmt"

// Price is what a model costs, in US dollars per million tokens of each kind.
type Price struct {
	Input      float64 `toml:"input_per_mtok" json:"input_per_mtok"`
	Output     float64 `toml:"output_per_mtok" json:"output_per_mtok"`
	CacheRead  float64 `toml:"cache_read_per_mtok" json:"cache_read_per_mtok"`
	CacheWrite float64 `toml:"cache_write_per_mtok" json:"cache_write_per_mtok"`
}

// CheckPrices refuses a price table ([prices]) with an empty model name or a negative
// price.
func CheckPrices(prices map[string]Price) error {
	for k, v := range prices {
		if k == "" || v.Input < 0 || v.Output < 0 || v.CacheRead < 0 || v.CacheWrite < 0 {
			return fmt.Errorf("prices.%q: a price is a model name (or its prefix) with prices per million tokens that are not negative", k)
		}
	}
	return nil
}

// Limit bounds spending: estimated US dollars and/or tokens (0: no bound of the kind).
type Limit struct {
	USD    float64 `toml:"usd" json:"usd,omitempty"`
	Tokens int64   `toml:"tokens" json:"tokens,omitempty"`
}

// None reports whether l bounds nothing.
func (l Limit) None() bool { return l.USD <= 0 && l.Tokens <= 0 }
