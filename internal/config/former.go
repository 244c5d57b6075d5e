package config

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// The guest was once called the agent, a word paddock keeps for the AI CLIs. The
// former names of its settings are still read, each with a one-line warning on stderr,
// once per process, naming the new one.

// deprecationOut is where the warnings go.
var deprecationOut io.Writer = os.Stderr

// warned holds the former names already warned of.
var warned sync.Map

// deprecated warns, the first time only, that former is deprecated in favour of now.
func deprecated(former, now string) {
	if _, done := warned.LoadOrStore(former, true); !done {
		fmt.Fprintf(deprecationOut, "paddock: %s is deprecated: use %s instead\n", former, now)
	}
}

// renameFormer moves the settings read under a former name to their new one.
func (c *Config) renameFormer(path string) error {
	if c.FormerGuestBinary == "" {
		return nil
	}
	if c.GuestBinary != "" {
		return fmt.Errorf("config %s: agent_binary and guest_binary say the same: keep guest_binary", path)
	}
	deprecated("the config key agent_binary", "guest_binary")
	c.GuestBinary, c.FormerGuestBinary = c.FormerGuestBinary, ""
	return nil
}

// GuestSource is the guest binary the config names, unless the environment names one in
// PADDOCK_GUEST_BINARY (or its former name, PADDOCK_AGENT_BINARY); empty when neither
// does.
func (c Config) GuestSource() string {
	if env := os.Getenv("PADDOCK_GUEST_BINARY"); env != "" {
		return env
	}
	if env := os.Getenv("PADDOCK_AGENT_BINARY"); env != "" {
		deprecated("PADDOCK_AGENT_BINARY", "PADDOCK_GUEST_BINARY")
		return env
	}
	return c.GuestBinary
}
