// Package tokens counts the tokens of model responses, as transcripts, runs and the
// credential proxy's meter count them and the API carries them. It is a leaf of the
// wire types: a type of its own, so that the types that embed it keep the field name
// Usage.
package tokens

// Usage counts the tokens of model responses. The fields do not overlap:
// InputTokens is the input that was neither read from nor written to the
// prompt cache, so the four add up to everything the model was sent and
// answered.
type Usage struct {
	// InputTokens is the uncached input.
	InputTokens int64 `json:"input_tokens"`
	// OutputTokens is the output, reasoning included.
	OutputTokens int64 `json:"output_tokens"`
	// CacheReadTokens is the input read from the prompt cache.
	CacheReadTokens int64 `json:"cache_read_tokens"`
	// CacheWriteTokens is the input written to the prompt cache.
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
}

// Total is every kind of token together, as token budgets count them.
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}
