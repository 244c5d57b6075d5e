package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	errdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/inside"
)

// Create makes the sandbox's volumes and container, and copies the guest in
// through the Engine API (no bind mount of the host binary), checking its sha256.
func (d *Docker) Create(ctx context.Context, spec backend.Spec) error {
	name := containerName(spec.ID)
	if _, err := d.cli.ContainerInspect(ctx, name); err == nil {
		return nil
	} else if !errdefs.IsNotFound(err) {
		return err
	}
	img := d.image
	if spec.Image != "" {
		img = spec.Image
	}
	if _, err := d.cli.ImageInspect(ctx, img); err != nil {
		return fmt.Errorf("image %s is missing: build it with `paddock image build` (or `docker build -t %s .`)", img, img)
	}
	limits := backend.LimitsFor(spec)
	labels := map[string]string{Label: string(spec.ID), Label + ".name": spec.Name}
	for _, v := range []string{"workspace", "home"} {
		if _, err := d.cli.VolumeCreate(ctx, volume.CreateOptions{Name: volumeName(spec.ID, v), Labels: labels}); err != nil {
			return fmt.Errorf("create volume: %w", err)
		}
	}
	netMode := container.NetworkMode("none")
	if spec.OpenNetwork {
		netMode = "bridge"
	}
	cfg := &container.Config{
		Image: img, Hostname: spec.Name, User: "1000:1000", WorkingDir: inside.Workspace,
		Env:    append(backend.BaseEnv(spec), spec.Env...),
		Cmd:    []string{agentPath, inside.GuestCommand, "serve", "--socket", agentSocket, "--sandbox", spec.Name},
		Labels: labels,
	}
	runtime := d.runtimeOf(spec)
	pids := hostPids(runtime, limits.Pids)
	host := &container.HostConfig{
		NetworkMode: netMode,
		Mounts: []mount.Mount{
			{Type: mount.TypeVolume, Source: volumeName(spec.ID, "workspace"), Target: inside.Workspace},
			{Type: mount.TypeVolume, Source: volumeName(spec.ID, "home"), Target: inside.Home},
		},
		Tmpfs:         tmpfsMounts(limits),
		CapDrop:       []string{"ALL"},
		SecurityOpt:   []string{"no-new-privileges"},
		RestartPolicy: container.RestartPolicy{Name: "unless-stopped"},
		Runtime:       runtime,
		Init:          boolPtr(true),
		Resources: container.Resources{
			NanoCPUs: int64(limits.CPUs * 1e9), Memory: limits.MemoryBytes, MemorySwap: limits.MemoryBytes, // no swap beyond it
			PidsLimit: &pids,
		},
	}
	if _, err := d.cli.ContainerCreate(ctx, cfg, host, &network.NetworkingConfig{}, nil, name); err != nil {
		return fmt.Errorf("create container: %w", err)
	}
	if err := d.copyAgent(ctx, name, spec); err != nil {
		d.cli.ContainerRemove(context.WithoutCancel(ctx), name, container.RemoveOptions{Force: true})
		return err
	}
	return nil
}

func boolPtr(b bool) *bool { return &b }

// copyAgent puts the guest binary at agentPath in the container and checks what landed
// has the expected sha256.
func (d *Docker) copyAgent(ctx context.Context, name string, spec backend.Spec) error {
	data, err := os.ReadFile(spec.AgentBinary)
	if err != nil {
		return fmt.Errorf("read agent binary: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, dir := range []string{"opt/", "opt/paddock/", "opt/paddock/bin/"} {
		tw.WriteHeader(&tar.Header{Name: dir, Mode: 0o755, Typeflag: tar.TypeDir})
	}
	tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(agentPath, "/"), Mode: 0o555, Size: int64(len(data)), Typeflag: tar.TypeReg})
	tw.Write(data)
	tw.Close()
	if err := d.cli.CopyToContainer(ctx, name, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("copy the agent into the container: %w", err)
	}
	rc, _, err := d.cli.CopyFromContainer(ctx, name, agentPath)
	if err != nil {
		return fmt.Errorf("read the agent back: %w", err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		return fmt.Errorf("read the agent back: %w", err)
	}
	h := sha256.New()
	io.Copy(h, tr)
	if got := hex.EncodeToString(h.Sum(nil)); spec.AgentSHA256 != "" && got != spec.AgentSHA256 {
		return fmt.Errorf("the agent in the container has sha256 %s, want %s", got, spec.AgentSHA256)
	}
	return nil
}

// Start starts the container and returns once the guest answers.
func (d *Docker) Start(ctx context.Context, id backend.ID) error {
	name := containerName(id)
	c, err := d.cli.ContainerInspect(ctx, name)
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("sandbox %s: %w (its container was removed: remove the sandbox and make it again)", id, backend.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if !c.State.Running {
		if err := d.cli.ContainerStart(ctx, name, container.StartOptions{}); err != nil {
			return fmt.Errorf("start container: %w", explainStart(err))
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := d.probe(ctx, name)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the guest in %s did not answer: %w", name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// probe runs the handshake once.
func (d *Docker) probe(ctx context.Context, name string) error {
	conn, err := d.dial(ctx, name)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = guestproto.ClientHandshake(conn, "probe")
	return err
}
