package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/diskimage"
	"github.com/paddockhq/paddock/internal/inside"
)

var _ backend.DiskLimiter = (*Docker)(nil)

// A sandbox made with a disk limit has, instead of a workspace volume (the local driver
// bounds none), a host directory bind-mounted at /workspace: an image of the limit's
// size, formatted ext4 and loop-mounted there. Its container is not restarted by the
// engine (restart policy "no"): after a reboot of the host the daemon starts it again,
// mounting the image first; until then the directory is root's with mode 0000.
func (d *Docker) diskDir(id backend.ID) string { return filepath.Join(d.dir, "disks", string(id)) }
func (d *Docker) diskImage(id backend.ID) string {
	return filepath.Join(d.diskDir(id), "workspace.img")
}
func (d *Docker) diskMount(id backend.ID) string { return filepath.Join(d.diskDir(id), "workspace") }

// CanLimitDisk implements backend.DiskLimiter: the image is mounted on this machine, so
// the engine must run here, as this machine's root, and so must the daemon.
func (d *Docker) CanLimitDisk(ctx context.Context) error {
	if !d.canDirect() || !d.engineHere(ctx) {
		return &diskimage.UnavailableError{
			Reason: "the docker engine is not this machine's own (another host, rootless or userns-remap), or the daemon does not run as root, so a workspace's disk image cannot be mounted where the engine sees it",
			Fix:    "run the daemon as root with the machine's own engine, or leave out --disk"}
	}
	return diskimage.Check()
}

// workspaceMount is the container's /workspace: its volume, or for a sandbox made with a
// disk limit the directory its image is mounted at, made now. The restart policy is the
// one the container gets.
func (d *Docker) workspaceMount(ctx context.Context, spec backend.Spec, labels map[string]string) (mount.Mount, container.RestartPolicy, error) {
	if spec.DiskBytes <= 0 {
		return sandboxVolume(spec.ID, "workspace", inside.Workspace, labels), container.RestartPolicy{Name: "unless-stopped"}, nil
	}
	if err := d.CanLimitDisk(ctx); err != nil {
		return mount.Mount{}, container.RestartPolicy{}, err
	}
	if err := os.MkdirAll(d.diskDir(spec.ID), 0o700); err != nil {
		return mount.Mount{}, container.RestartPolicy{}, err
	}
	if err := diskimage.Make(ctx, d.diskImage(spec.ID), d.diskMount(spec.ID), spec.DiskBytes, 1000, 1000); err != nil {
		return mount.Mount{}, container.RestartPolicy{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	return mount.Mount{Type: mount.TypeBind, Source: d.diskMount(spec.ID), Target: inside.Workspace},
		container.RestartPolicy{Name: "no"}, nil
}

// mountDisk mounts a sandbox's workspace image again before its container starts (it is
// gone after a reboot of the host); a sandbox without one is left as it is.
func (d *Docker) mountDisk(ctx context.Context, id backend.ID) error {
	if d.dir == "" {
		return nil
	}
	if err := diskimage.Remount(ctx, d.diskImage(id), d.diskMount(id)); err != nil {
		return fmt.Errorf("start sandbox %s: %w", id, err)
	}
	return nil
}

// diskLimit reads back a sandbox's disk limit from its workspace's mount: zero for one
// made without, an error for one whose image is not mounted.
func (d *Docker) diskLimit(id backend.ID) (int64, error) {
	if d.dir == "" {
		return 0, nil
	}
	return diskimage.Limit(d.diskImage(id), d.diskMount(id))
}

// removeDisk unmounts and deletes a sandbox's workspace image and its directory, once
// its container is gone.
func (d *Docker) removeDisk(id backend.ID) error {
	if d.dir == "" {
		return nil
	}
	if err := diskimage.Remove(d.diskImage(id), d.diskMount(id)); err != nil {
		return err
	}
	if err := os.RemoveAll(d.diskDir(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the workspace's directory: %w", err)
	}
	return nil
}

// diskLeftovers lists what a sandbox's workspace image left on the host.
func (d *Docker) diskLeftovers(id backend.ID) []string {
	if d.dir == "" {
		return nil
	}
	out := diskimage.Leftovers(d.diskDir(id))
	if _, err := os.Lstat(d.diskDir(id)); err == nil {
		out = append(out, "directory "+d.diskDir(id))
	}
	return out
}
