package docker

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	errdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/paddockhq/paddock/internal/sandbox"
)

// TestGuestVolume: the guest's volume outlives what a user or another paddock does to it.
// Removed (docker volume prune), the next sandbox puts it back; made again empty by the
// engine (a container mounting it after its removal), the next sandbox fills it again
// although this daemon had checked it before; and a new guest's volume removes the
// volumes of other guests no container uses, never one in use.
func TestGuestVolume(t *testing.T) {
	d, agent := directBackend(t)
	ctx := context.Background()
	// This guest's volume may be in use by sandboxes of other tests on the engine: a
	// guest of its own (the same program, one byte more) gets a volume only this test uses.
	data, err := os.ReadFile(agent.Path)
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(t.TempDir(), "paddock")
	if err := os.WriteFile(own, append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	agent, err = sandbox.InstallGuest(own, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	vol := guestVolumeName(agent.SHA256)
	t.Cleanup(func() { d.cli.VolumeRemove(context.Background(), vol, true) })

	startSandbox(t, d, agent, "first") // fills it

	t.Run("Pruned", func(t *testing.T) {
		removeGuestVolume(t, d, vol)
		reachesGuest(t, d, startSandbox(t, d, agent, "pruned"), "pruned")
	})

	t.Run("MadeAgainEmpty", func(t *testing.T) {
		removeGuestVolume(t, d, vol)
		// What the engine does when a container mounts a volume that no longer exists.
		resp, err := d.cli.ContainerCreate(ctx, &container.Config{Image: DefaultImage, Cmd: []string{"true"}},
			&container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: vol, Target: "/x"}}}, nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := d.cli.ContainerRemove(ctx, resp.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		reachesGuest(t, d, startSandbox(t, d, agent, "refilled"), "refilled")
		// Made again with its label, so that a later guest's sandbox can remove it.
		v, err := d.cli.VolumeInspect(ctx, vol)
		if err != nil || v.Labels[GuestLabel] != agent.SHA256 {
			t.Fatalf("the guest's volume was not made again with its label: %v, %v", v.Labels, err)
		}
	})

	t.Run("OtherGuests", func(t *testing.T) {
		labels := map[string]string{GuestLabel: "an older guest"}
		unused, err := d.cli.VolumeCreate(ctx, volume.CreateOptions{Name: "paddock-guest-test-unused", Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.cli.VolumeRemove(context.Background(), unused.Name, true) })
		used, err := d.cli.VolumeCreate(ctx, volume.CreateOptions{Name: "paddock-guest-test-used", Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.cli.VolumeRemove(context.Background(), used.Name, true) })
		// A stopped sandbox of an older guest: made, never started.
		user, err := d.cli.ContainerCreate(ctx, &container.Config{Image: DefaultImage, Cmd: []string{"true"}},
			&container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: used.Name, Target: "/x"}}}, nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.cli.ContainerRemove(context.Background(), user.ID, container.RemoveOptions{Force: true}) })
		removeGuestVolume(t, d, vol) // so that the next sandbox makes its guest's volume anew
		startSandbox(t, d, agent, "newer")
		if _, err := d.cli.VolumeInspect(ctx, unused.Name); !errdefs.IsNotFound(err) {
			t.Errorf("an unused volume of another guest was kept (%v)", err)
		}
		if _, err := d.cli.VolumeInspect(ctx, used.Name); err != nil {
			t.Errorf("the volume of another guest a container uses was removed: %v", err)
		}
	})
}

// removeGuestVolume removes the guest's volume with the containers that use it.
func removeGuestVolume(t *testing.T, d *Docker, vol string) {
	t.Helper()
	ctx := context.Background()
	cs, err := d.cli.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		for _, m := range c.Mounts {
			if m.Name == vol {
				d.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
			}
		}
	}
	// Gone already is as good: another paddock on the engine (a test beside this one, with
	// a guest of its own) removes the volumes of other guests that no container uses.
	if err := d.cli.VolumeRemove(ctx, vol, false); err != nil && !errdefs.IsNotFound(err) {
		t.Fatal(err)
	}
}
