package gemini

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/agents"
)

// TestNoUpdates: the Gemini CLI in a sandbox neither looks for a newer version nor
// installs one (general.enableAutoUpdate and enableAutoUpdateNotification, Gemini CLI
// 0.61's names; the image pins its version).
func TestNoUpdates(t *testing.T) {
	for _, f := range files(agents.Session{Dir: "/workspace"}) {
		if !strings.HasSuffix(f.Path, "/.gemini/settings.json") {
			continue
		}
		raw, _ := json.Marshal(f.Merge)
		var s struct {
			General map[string]any `json:"general"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"enableAutoUpdate", "enableAutoUpdateNotification"} {
			if v, ok := s.General[k]; !ok || v != false {
				t.Errorf("settings.json general.%s = %v, want false: %s", k, v, raw)
			}
		}
		return
	}
	t.Fatal("no ~/.gemini/settings.json")
}
