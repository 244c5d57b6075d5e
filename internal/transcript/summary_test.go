package transcript

import (
	"slices"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		entries []Entry
		want    Summary
	}{
		{name: "empty", want: Summary{}},
		{
			name: "messages, latest time, usage and files",
			entries: []Entry{
				{Time: t0, Kind: KindUser, Text: "hi"},
				{Time: t0.Add(3 * time.Second), Kind: KindAssistant, Text: "a", Usage: &Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}},
				{Time: t0.Add(4 * time.Second), Kind: KindToolCall, Tool: "Write", Usage: &Usage{InputTokens: 10, OutputTokens: 20}},
				{Time: t0.Add(5 * time.Second), Kind: KindFileChange, Path: "/b"},
				{Time: t0.Add(6 * time.Second), Kind: KindFileChange, Path: "/a"},
				{Time: t0.Add(7 * time.Second), Kind: KindFileChange, Path: "/b"},
				// Out of order: the last activity is the latest, not the last.
				{Time: t0.Add(time.Second), Kind: KindAssistant, Text: "b"},
			},
			want: Summary{Messages: 3, LastActivity: t0.Add(7 * time.Second),
				Usage: Usage{InputTokens: 11, OutputTokens: 22, CacheReadTokens: 3, CacheWriteTokens: 4}, Files: []string{"/b", "/a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.entries)
			if got.Messages != tt.want.Messages || !got.LastActivity.Equal(tt.want.LastActivity) ||
				got.Usage != tt.want.Usage || !slices.Equal(got.Files, tt.want.Files) {
				t.Errorf("Summarize = %+v, want %+v", got, tt.want)
			}
		})
	}
}
