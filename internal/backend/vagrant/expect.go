package vagrant

import (
	"context"

	"github.com/paddockhq/paddock/internal/backend"
)

// Expect implements backend.Expecter: a Vagrant machine is a machine of its own, whose
// agent has sudo and whose network is the machine's.
func (v *Vagrant) Expect(context.Context, string) backend.Expect {
	return backend.Expect{Machine: "a Vagrant VM, where the agent has sudo and the VM's own network (docs/security.md)"}
}
