package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
)

// Port is a TCP port a process inside a sandbox listens on, as `paddock guest ports`
// (guest.Listening) reports it.
type Port struct {
	Port    int    `json:"port"`
	Address string `json:"address"`
	Process string `json:"process,omitempty"`
	PID     string `json:"pid,omitempty"`
}

// Ports lists the ports processes inside the sandbox listen on now, asked of the
// sandbox itself (`paddock guest ports`), so the answer holds after a daemon restart and
// for ports that opened before anyone watched.
func (s *Service) Ports(ctx context.Context, name string) ([]Port, error) {
	c, err := s.Client(ctx, name)
	if err != nil {
		return nil, err
	}
	var out, errOut bytes.Buffer
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{inside.GuestBinary, inside.GuestCommand, "ports"}, Dir: "/", Stdout: &out, Stderr: &errOut})
	if err != nil {
		return nil, fmt.Errorf("list the ports of sandbox %q: %w", name, err)
	}
	if code != 0 {
		return nil, fmt.Errorf("list the ports of sandbox %q: exit %d: %s", name, code, bytes.TrimSpace(errOut.Bytes()))
	}
	var ports []Port
	if err := json.Unmarshal(out.Bytes(), &ports); err != nil {
		return nil, fmt.Errorf("list the ports of sandbox %q: %w", name, err)
	}
	return ports, nil
}
