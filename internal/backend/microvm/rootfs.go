package microvm

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/paddockhq/paddock/internal/vmspec"
)

// rootImage returns the root file system image (ext4) to boot: the configured one, or
// one made once per image from the local engine's image (exported, unpacked with its
// owners, and written with mke2fs -d), kept in the backend's image cache.
func (m *MicroVM) rootImage(ctx context.Context, image string, progress func(string)) (string, error) {
	if m.settings.Rootfs != "" {
		return m.settings.Rootfs, nil
	}
	if image == "" {
		image = m.settings.Image
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return "", err
	}
	defer cli.Close()
	info, err := cli.ImageInspect(ctx, image)
	if err != nil {
		return "", fmt.Errorf("the image %s: %w (build it with `paddock image build`, or set rootfs in [backends.microvm])", image, err)
	}
	id := strings.TrimPrefix(info.ID, "sha256:")
	if len(id) > 16 {
		id = id[:16]
	}
	dst := filepath.Join(m.imageDir(), "rootfs-"+id+".ext4")
	m.imageMu.Lock()
	defer m.imageMu.Unlock()
	if _, err := os.Stat(dst); err == nil {
		progress(fmt.Sprintf("the root file system of %s is made already: %s", image, dst))
		return dst, nil
	}
	if os.Geteuid() != 0 {
		// Unpacked by another user, every file would be that user's inside the VM
		// (mke2fs -d copies owners): /etc the sandbox user's, if that user is uid 1000.
		return "", fmt.Errorf("microvm: the root file system of %s is made from the image with its files' owners, which only root can unpack: run `paddock serve` once as root to make it (it is kept in %s), or set rootfs in [backends.microvm] to an ext4 image labelled %s", image, m.imageDir(), vmspec.RootLabel)
	}
	if err := os.MkdirAll(m.imageDir(), 0o700); err != nil {
		return "", err
	}
	tree, err := os.MkdirTemp(m.imageDir(), "rootfs-tree-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tree)
	progress(fmt.Sprintf("exporting %s from the engine", image))
	if err := exportImage(ctx, cli, image, tree); err != nil {
		return "", err
	}
	// Room for the file system's own structures; writes go to the data disk.
	files := dirSize(tree)
	size := files*5/4 + 256<<20
	progress(fmt.Sprintf("writing its %d MiB of files into an ext4 root file system (mke2fs -d)", files>>20))
	if err := mkfs(ctx, dst, vmspec.RootLabel, tree, size); err != nil {
		return "", fmt.Errorf("the root file system of %s: %w", image, err)
	}
	progress("root file system: " + dst)
	return dst, nil
}

// exportImage writes an image's file system into dir, through a container made and
// removed for the purpose (never started).
func exportImage(ctx context.Context, cli *client.Client, image, dir string) error {
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: image, Cmd: []string{"true"}}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		return fmt.Errorf("export %s: %w", image, err)
	}
	defer cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
	rc, err := cli.ContainerExport(ctx, c.ID)
	if err != nil {
		return fmt.Errorf("export %s: %w", image, err)
	}
	defer rc.Close()
	// GNU tar keeps the owners (as root) and the device files, links and modes a root
	// file system holds; the archive comes from the local engine.
	tar := exec.CommandContext(ctx, "tar", "-x", "--numeric-owner", "-p", "-C", dir, "-f", "-")
	tar.Stdin = rc
	var stderr strings.Builder
	tar.Stderr = &stderr
	if err := tar.Run(); err != nil {
		io.Copy(io.Discard, rc)
		return fmt.Errorf("unpack %s: %v: %s", image, err, tail(stderr.String(), 4))
	}
	return nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// PrepareImage implements backend.ImagePreparer (`paddock image build --format
// microvm`): it unpacks the kernel VMs boot and makes the root file system of image (the
// configured one when empty), as the first sandbox would, and returns the root file
// system's path.
func (m *MicroVM) PrepareImage(ctx context.Context, image string, progress func(string)) (string, error) {
	k, elf, err := m.kernelFile()
	if err != nil {
		return "", err
	}
	progress(fmt.Sprintf("kernel %s: %s", k.Release, elf))
	return m.rootImage(ctx, image, progress)
}
