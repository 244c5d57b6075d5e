// Package goose adapts Goose (block/goose), which is not on npm: it must be installed on
// the host (bwrap) or in the image.
package goose

import (
	"errors"
	"strings"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Adapter{}) }

// Adapter is Goose, configured through its environment to use Anthropic through the
// credential proxy and to run tools without asking.
type Adapter struct{}

var _ agents.Adapter = Adapter{}

// Name implements agents.Adapter.
func (Adapter) Name() string { return "goose" }

// Binary implements agents.Adapter.
func (Adapter) Binary() string { return "goose" }

// Install implements agents.Adapter.
func (Adapter) Install() string {
	return "install the goose binary from its release page into the image or the host's /usr/local/bin"
}

// Reports implements agents.Adapter.
func (Adapter) Reports() agents.Reports { return agents.Reports{} }

// StatusSource implements agents.Adapter.
func (Adapter) StatusSource() string {
	return "no hook: the session shows running until its process exits"
}

// Files implements agents.Adapter.
func (Adapter) Files(s agents.Session) []agents.File {
	return []agents.File{{Path: inside.Home + "/.config/goose/.goosehints", Content: []byte(agents.SystemPrompt + "\n"), Mode: 0o644}}
}

// Launch implements agents.Adapter.
func (Adapter) Launch(s agents.Session) []string { return []string{"goose", "session", "-n", s.Name} }

// Resume implements agents.Adapter.
func (Adapter) Resume(s agents.Session) []string {
	return []string{"goose", "session", "-r", "-n", s.Name}
}

// Env implements agents.Adapter.
func (Adapter) Env(agents.Session) []string {
	return []string{"GOOSE_PROVIDER=anthropic", "GOOSE_MODE=auto", "GOOSE_DISABLE_KEYRING=1"}
}

// Ask implements agents.Adapter.
func (Adapter) Ask(s agents.Session, prompt string) []string {
	return []string{"goose", "run", "-r", "-n", s.Name, "-t", prompt}
}

// Answer returns goose's printed output.
func (Adapter) Answer(output []byte) (string, string, error) {
	text := strings.TrimSpace(string(output))
	if text == "" {
		return "", "", errors.New("goose printed nothing")
	}
	return text, "", nil
}

// Transcript implements agents.Adapter.
func (Adapter) Transcript(agents.Session) string { return "" }

// Parse implements agents.Adapter.
func (Adapter) Parse() func([]byte) ([]transcript.Entry, error) { return nil }

// ChoosesID implements agents.Adapter.
func (Adapter) ChoosesID() bool { return false }

// Fork implements agents.Adapter: goose cannot continue a copy of a conversation.
func (Adapter) Fork(agents.Session, string) []string { return nil }
