package config

import (
	"fmt"
	"strings"
)

// Checkpoints is the config's [checkpoints] section: how many checkpoints of its
// agents' turns each sandbox keeps, and what they leave out.
type Checkpoints struct {
	// Keep is how many checkpoints each sandbox keeps, the newest, besides the named
	// ones (never pruned). 0 means 200.
	Keep int `toml:"keep"`
	// MaxMB bounds, in MiB, what a sandbox's checkpoints store (the files each added);
	// the oldest unnamed ones are pruned past it. 0 means no bound.
	MaxMB int64 `toml:"max_mb"`
	// Exclude are paths of the workspace left out of every checkpoint besides those git
	// ignores, as git pathspecs relative to /workspace ("data/", "*.bin"). A rewind
	// leaves them as they are.
	Exclude []string `toml:"exclude"`
}

func (c Checkpoints) validate() error {
	if c.Keep < 0 || c.MaxMB < 0 {
		return fmt.Errorf("keep and max_mb cannot be negative")
	}
	for _, e := range c.Exclude {
		if strings.TrimSpace(e) == "" || strings.HasPrefix(e, "/") || strings.HasPrefix(e, ":") || strings.Contains(e, "..") {
			return fmt.Errorf("exclude: %q is not a path relative to /workspace (write \"data/\" or \"*.bin\")", e)
		}
	}
	return nil
}
