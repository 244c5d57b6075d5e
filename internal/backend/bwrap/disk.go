package bwrap

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/diskimage"
)

var _ backend.DiskLimiter = (*Bwrap)(nil)

// diskImage is the file holding the workspace of a sandbox made with a disk limit,
// beside the workspace and out of the sandbox's sight.
func (p paths) diskImage() string { return filepath.Join(p.root, "workspace.img") }

// CanLimitDisk implements backend.DiskLimiter: a workspace is bounded by a loop-mounted
// image, which needs root.
func (b *Bwrap) CanLimitDisk(ctx context.Context) error { return diskimage.Check() }

// makeDisk gives a sandbox made with a disk limit its workspace: an image of that size,
// mounted at the workspace directory before anything is written there.
func (b *Bwrap) makeDisk(ctx context.Context, spec backend.Spec, p paths) error {
	if spec.DiskBytes <= 0 {
		return nil
	}
	if err := diskimage.Check(); err != nil {
		return err
	}
	if err := diskimage.Make(ctx, p.diskImage(), p.workspace(), spec.DiskBytes, b.hostID, b.hostID); err != nil {
		return fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	return nil
}

// mountDisk mounts a sandbox's workspace image again before it starts (it is gone after
// a reboot of the host); a sandbox without one is left as it is.
func (b *Bwrap) mountDisk(ctx context.Context, id backend.ID) error {
	p := b.paths(id)
	if err := diskimage.Remount(ctx, p.diskImage(), p.workspace()); err != nil {
		return fmt.Errorf("start sandbox %s: %w", id, err)
	}
	return nil
}

// diskLimit reads back the disk limit of a sandbox's workspace from its mount: zero for
// one made without, an error for one whose image is not mounted.
func (b *Bwrap) diskLimit(id backend.ID) (int64, error) {
	p := b.paths(id)
	return diskimage.Limit(p.diskImage(), p.workspace())
}

// removeDisk unmounts and deletes a sandbox's workspace image, if it has one.
func (b *Bwrap) removeDisk(id backend.ID) error {
	p := b.paths(id)
	return diskimage.Remove(p.diskImage(), p.workspace())
}
