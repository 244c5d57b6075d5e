package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	errdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/paddockhq/paddock/internal/backend"
)

// GuestLabel marks the volumes that hold a guest binary, with its sha256. They are
// shared by every sandbox whose guest has that hash, so they carry no sandbox's label
// and outlive the sandboxes. Making one for a new guest removes those of other guests no
// container uses (a stopped sandbox's container still uses its own); `docker volume
// prune` removes the unused ones too, and the next sandbox made puts its guest back.
const GuestLabel = "dev.paddock.guest"

// guestVolumeTarget is where a helper container mounts a guest volume to fill it or read
// it back: a path no image has, so the engine copies nothing of the image into it.
const guestVolumeTarget = "/paddock-guest-volume"

// guestVolumeName names the volume holding the guest whose sha256 is sum.
func guestVolumeName(sum string) string { return "paddock-guest-" + sum[:16] }

// guestMount mounts a guest volume read-only where every sandbox runs its guest from.
// NoCopy: an image with files at /opt/paddock/bin never gets them copied into the volume.
func guestMount(vol string) mount.Mount {
	return mount.Mount{Type: mount.TypeVolume, Source: vol, Target: path.Dir(guestPath), ReadOnly: true,
		VolumeOptions: &mount.VolumeOptions{NoCopy: true}}
}

// guestVolume returns the volume holding the spec's guest and the guest's sha256, the
// volume made (and its content checked against the sha256) the first time this engine
// sees that guest. A volume this process did not fill is read back and checked once;
// after that each sandbox costs one inspect, which notices a volume removed since, or
// made again empty (as mounting a missing volume does: such a volume lacks the label).
func (d *Docker) guestVolume(ctx context.Context, spec backend.Spec, image string) (string, string, error) {
	sum := spec.GuestSHA256
	if sum == "" {
		s, err := backend.FileSHA256(spec.GuestBinary)
		if err != nil {
			return "", "", fmt.Errorf("guest binary %s: %w", spec.GuestBinary, err)
		}
		sum = s
	}
	name := guestVolumeName(sum)
	d.guestMu.Lock()
	defer d.guestMu.Unlock()
	v, err := d.cli.VolumeInspect(ctx, name)
	if err == nil && v.Labels[GuestLabel] != sum {
		if err := d.cli.VolumeRemove(ctx, name, false); err != nil {
			return "", "", fmt.Errorf("remove the volume %s, made without its guest: %w (remove the containers that use it)", name, err)
		}
		_, err = d.cli.VolumeInspect(ctx, name)
	}
	switch {
	case errdefs.IsNotFound(err):
		v, err = d.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: map[string]string{GuestLabel: sum}})
		if err != nil {
			return "", "", fmt.Errorf("create the guest's volume: %w", err)
		}
		if err := d.removeOtherGuests(ctx, name); err != nil {
			return "", "", err
		}
	case err != nil:
		return "", "", fmt.Errorf("inspect the guest's volume: %w", err)
	case d.guestVols[name] == v.CreatedAt:
		return name, sum, nil
	}
	if err := d.fillGuestVolume(ctx, name, image, spec.GuestBinary, sum); err != nil {
		return "", "", err
	}
	d.guestVols[name] = v.CreatedAt
	return name, sum, nil
}

// fillGuestVolume makes sure the volume holds the guest with sha256 sum, through a helper
// container that is made but never started: it reads the volume's file back, and writes
// the guest only when that is missing or differs, then checks what it wrote.
func (d *Docker) fillGuestVolume(ctx context.Context, vol, image, src, sum string) error {
	resp, err := d.cli.ContainerCreate(ctx, &container.Config{Image: image, Cmd: []string{"true"},
		Labels: map[string]string{GuestLabel: sum}},
		&container.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: vol,
			Target: guestVolumeTarget, VolumeOptions: &mount.VolumeOptions{NoCopy: true}}}}, nil, nil, "")
	if err != nil {
		return fmt.Errorf("fill the guest's volume: %w", err)
	}
	defer d.cli.ContainerRemove(context.WithoutCancel(ctx), resp.ID, container.RemoveOptions{Force: true})
	file := guestVolumeTarget + "/" + path.Base(guestPath)
	// A guest there but not whole is another daemon's write under way (on the same
	// engine): writing over it would replace the file a container of that daemon is
	// about to start from ("failed to load /opt/paddock/bin/paddock: bad address" under
	// gVisor). Give that write a moment to end before writing it ourselves.
	for try := 1; ; try++ {
		got, err := d.readSHA256(ctx, resp.ID, file)
		if err == nil && got == sum {
			return nil
		}
		if err != nil || try == 3 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(try) * 500 * time.Millisecond):
		}
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("read guest binary: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: path.Base(guestPath), Mode: 0o555, Size: int64(len(data)), Typeflag: tar.TypeReg})
	tw.Write(data)
	if err := tw.Close(); err != nil {
		return err
	}
	// Another daemon on the same engine may be filling the same volume at the same
	// time (each test of a whole run has its own): both write the same bytes, but a
	// read back in the middle of the other's write sees part of it. Written and read
	// again, a moment later, it holds the guest whole.
	var got string
	for try := 1; ; try++ {
		if err := d.cli.CopyToContainer(ctx, resp.ID, guestVolumeTarget, bytes.NewReader(buf.Bytes()), container.CopyToContainerOptions{}); err != nil {
			return fmt.Errorf("copy the guest into its volume: %w", err)
		}
		if got, err = d.readSHA256(ctx, resp.ID, file); err != nil {
			return fmt.Errorf("read the guest back from its volume: %w", err)
		}
		if got == sum {
			return nil
		}
		if try == 3 {
			return fmt.Errorf("the guest in the volume %s has sha256 %s, want %s: remove the volume (docker volume rm %s) and try again", vol, got, sum, vol)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(try) * 500 * time.Millisecond):
		}
	}
}

// readSHA256 is the sha256 of one regular file in a container, read through the engine.
func (d *Docker) readSHA256(ctx context.Context, id, file string) (string, error) {
	rc, _, err := d.cli.CopyFromContainer(ctx, id, file)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		return "", err
	}
	if hdr.Typeflag != tar.TypeReg {
		return "", errors.New(file + " is not a regular file")
	}
	h := sha256.New()
	if _, err := io.Copy(h, tr); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// removeOtherGuests removes the guest volumes other than keep that no container uses;
// the engine refuses to remove one in use, which stays.
func (d *Docker) removeOtherGuests(ctx context.Context, keep string) error {
	vs, err := d.cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", GuestLabel))})
	if err != nil {
		return fmt.Errorf("list the guests' volumes: %w", err)
	}
	for _, v := range vs.Volumes {
		if v.Name == keep {
			continue
		}
		if err := d.cli.VolumeRemove(ctx, v.Name, false); err != nil && !errdefs.IsConflict(err) && !errdefs.IsNotFound(err) {
			return fmt.Errorf("remove the unused guest volume %s: %w", v.Name, err)
		}
	}
	return nil
}

// guestStillThere checks, after a container was made, that the guest's volume it mounts
// is still the one filled: another paddock may have removed it as unused between the
// inspect and the create, and the engine would then have made an empty one.
func (d *Docker) guestStillThere(ctx context.Context, vol, sum string) (bool, error) {
	v, err := d.cli.VolumeInspect(ctx, vol)
	if err != nil {
		return false, fmt.Errorf("inspect the guest's volume: %w", err)
	}
	return v.Labels[GuestLabel] == sum, nil
}
