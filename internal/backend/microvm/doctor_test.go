package microvm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/microvm"
)

// TestAvailability: what doctor says when QEMU or the kernel is missing, and when VMs
// run without KVM.
func TestAvailability(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      map[string]any
		reason    string
		fix       string
		available bool
	}{
		{"missing qemu", map[string]any{"qemu": "qemu-system-nowhere"}, "QEMU (qemu-system-nowhere) is not installed", "apt-get install qemu-system-x86", false},
		{"missing kernel", map[string]any{"kernel": "/boot/vmlinuz-0.0.0-none"}, "/boot/vmlinuz-0.0.0-none", "apt-get install linux-image-amd64", false},
		{"firecracker missing", map[string]any{"vmm": "firecracker", "firecracker": "firecracker-nowhere"}, "Firecracker (firecracker-nowhere) is not installed", "--vmm qemu", false},
		{"jailer missing", map[string]any{"vmm": "firecracker", "firecracker": "/bin/true", "jailer": "jailer-nowhere", "jailer_uid": 1000, "jailer_gid": 1000},
			"jailer (jailer-nowhere) is not installed", "remove jailer", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := microvm.New(backend.Env{Dir: t.TempDir(), Options: tc.opts})
			if err != nil {
				t.Fatal(err)
			}
			err = b.Available(context.Background())
			var ue *backend.UnavailableError
			if !errors.As(err, &ue) {
				t.Fatalf("Available = %v, want an *UnavailableError", err)
			}
			if !strings.Contains(ue.Reason, tc.reason) || !strings.Contains(ue.Fix, tc.fix) {
				t.Fatalf("Available says %q (fix %q), want %q and a fix with %q", ue.Reason, ue.Fix, tc.reason, tc.fix)
			}
			if err := b.Create(context.Background(), backend.Spec{ID: "x", Name: "x"}); !errors.As(err, &ue) {
				t.Fatalf("Create where the backend cannot run = %v, want its *UnavailableError", err)
			}
		})
	}
	t.Run("no kvm", func(t *testing.T) {
		b := newBackend(t, map[string]any{"accel": "tcg"})
		var found bool
		for _, f := range b.Report(context.Background()) {
			if f.Topic == "acceleration" {
				found = true
				if f.OK || !strings.Contains(f.Text, "TCG") || !strings.Contains(f.Text, "slower") || f.Fix == "" {
					t.Fatalf("the acceleration finding without KVM: %+v, want it to say TCG, slower, and how to fix", f)
				}
			}
		}
		if !found {
			t.Fatal("doctor says nothing of the acceleration")
		}
		// Emulated is data on the backend's description: no automatic choice takes it.
		if d := b.Describe(); !d.Emulated || d.Isolation != backend.IsolationVM || !strings.Contains(d.Slow, "no KVM") ||
			!strings.Contains(d.Slow, "100 s to start") {
			t.Fatalf("under TCG the backend describes itself as %+v, want an emulated VM saying what it costs", d)
		}
		if d := newBackend(t, map[string]any{"accel": "kvm"}).Describe(); d.Emulated {
			t.Fatalf("under KVM the backend describes itself as emulated: %+v", d)
		}
	})
	t.Run("firecracker", func(t *testing.T) {
		b := newBackend(t, nil)
		var found bool
		for _, f := range b.Report(context.Background()) {
			if f.Topic == "firecracker" {
				found = true
				if f.OK || !strings.Contains(f.Text, "through its API") || !strings.Contains(f.Text, "faithful fake") ||
					!strings.Contains(f.Text, "never on a real Firecracker") {
					t.Fatalf("the Firecracker finding: %+v, want it to say it is driven through its API and tested only against a fake", f)
				}
			}
		}
		if !found {
			t.Fatal("doctor says nothing of Firecracker")
		}
	})
	t.Run("settings", func(t *testing.T) {
		for _, opts := range []map[string]any{{"vmm": "xen"}, {"accel": "hvf"}, {"disk_size": "1m"}, {"kernel": "boot/vmlinuz"}, {"nosuch": 1},
			{"jailer": "/usr/bin/jailer"}, {"jailer": "/usr/bin/jailer", "jailer_uid": 0, "jailer_gid": 0}} {
			if _, err := microvm.New(backend.Env{Dir: t.TempDir(), Options: opts}); err == nil {
				t.Errorf("settings %v accepted", opts)
			}
		}
	})
}
