package sandbox_test

import (
	"slices"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/bwrap"
	"github.com/paddockhq/paddock/internal/backend/docker"
	"github.com/paddockhq/paddock/internal/backend/microvm"
	"github.com/paddockhq/paddock/internal/backend/sshhost"
	"github.com/paddockhq/paddock/internal/sandbox"
)

// TestPreferenceSkipsEmulated: the daemon's order of defaults comes from the backends'
// descriptions: bwrap, then docker; a remote host never; a microVM never while it is
// emulated (accel = "tcg", as on a machine without KVM), whatever its place.
func TestPreferenceSkipsEmulated(t *testing.T) {
	all := map[string]backend.Backend{}
	for name, opts := range map[string]map[string]any{"bwrap": nil, "docker": nil, "microvm": {"accel": "tcg"}, "ssh": nil} {
		env := backend.Env{Dir: t.TempDir(), ConfigDir: t.TempDir(), Options: opts}
		var b backend.Backend
		var err error
		switch name {
		case "bwrap":
			b, err = bwrap.New(env)
		case "docker":
			b, err = docker.New(env)
		case "microvm":
			b, err = microvm.New(env)
		case "ssh":
			b, err = sshhost.New(env)
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		all[name] = b
	}
	if d := all["microvm"].Describe(); !d.Emulated {
		t.Fatalf("the microvm backend under TCG does not say it is emulated: %+v", d)
	}
	if got := sandbox.Preference(all); !slices.Equal(got, []string{"bwrap", "docker"}) {
		t.Fatalf("Preference = %v, want [bwrap docker]", got)
	}
}
