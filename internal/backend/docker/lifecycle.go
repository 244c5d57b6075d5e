package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"

	errdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/inside"
)

// Create makes the sandbox's container, whose volumes the engine makes as it mounts
// them, and mounts the guest read-only from the volume holding its binary (made, and its
// sha256 checked, once per guest). A sandbox of a local engine also gets its direct
// channel's small tmpfs.
func (d *Docker) Create(ctx context.Context, spec backend.Spec) error {
	name := containerName(spec.ID)
	if _, err := d.cli.ContainerInspect(ctx, name); err == nil {
		return nil // made before, by this paddock or an older one: kept as it is
	} else if !errdefs.IsNotFound(err) {
		return err
	}
	d.seen(spec.ID, "") // nothing kept of a container removed behind paddock's back
	img := d.image
	if spec.Image != "" {
		img = spec.Image
	}
	if _, err := d.cli.ImageInspect(ctx, img); err != nil {
		return fmt.Errorf("image %s is missing: build it with `paddock image build` (or `docker build -t %s .`)", img, img)
	}
	limits := backend.LimitsFor(spec)
	labels := map[string]string{Label: string(spec.ID), Label + ".name": spec.Name}
	netMode := container.NetworkMode("none")
	if spec.OpenNetwork {
		netMode = "bridge"
	}
	runtime := d.runtimeOf(spec)
	direct := d.wantsDirect(ctx, runtime)
	serve := []string{guestPath, inside.GuestCommand, "serve", "--socket", guestSocket}
	workspace, restart, err := d.workspaceMount(ctx, spec, labels)
	if err != nil {
		return err
	}
	mounts := []mount.Mount{workspace, sandboxVolume(spec.ID, "home", inside.Home, labels)}
	tmpfs := tmpfsMounts(limits)
	if direct {
		serve = append(serve, "--socket", directSocket)
		tmpfs[directTarget] = directTmpfs
	}
	cfg := &container.Config{
		Image: img, Hostname: spec.Name, User: "1000:1000", WorkingDir: inside.Workspace,
		Env: append(backend.BaseEnv(spec), spec.Env...),
		// Process 1 is the guest's ns-init, not docker-init: it is not dumpable, so no
		// process inside can trace it, stop it and leave its orphans' zombies unreaped.
		Entrypoint: []string{guestPath, inside.GuestCommand, "ns-init", "--"},
		Cmd:        append(serve, "--sandbox", spec.Name),
		Labels:     labels,
	}
	security, err := d.securityOpts(ctx, runtime)
	if err != nil {
		return err
	}
	pids := hostPids(runtime, limits.Pids)
	host := &container.HostConfig{
		NetworkMode:   netMode,
		Mounts:        mounts,
		Tmpfs:         tmpfs,
		CapDrop:       []string{"ALL"},
		SecurityOpt:   security,
		RestartPolicy: restart,
		LogConfig:     logConfig,
		Runtime:       runtime,
		Init:          boolPtr(false),
		Resources: container.Resources{
			NanoCPUs: int64(limits.CPUs * 1e9), Memory: limits.MemoryBytes, MemorySwap: limits.MemoryBytes, // no swap beyond it
			PidsLimit: &pids,
		},
	}
	if err := d.createWithGuest(ctx, spec, img, cfg, host); err != nil {
		return err
	}
	return d.giveMachineID(ctx, name)
}

// giveMachineID writes the container's own /etc/machine-id (the image has none, or one
// every container of it would share): each sandbox, a fork too, is a machine of its own.
func (d *Docker) giveMachineID(ctx context.Context, name string) error {
	id := make([]byte, 16)
	rand.Read(id)
	content := hex.EncodeToString(id) + "\n"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "machine-id", Mode: 0o444, Size: int64(len(content)), Typeflag: tar.TypeReg})
	tw.Write([]byte(content))
	if err := tw.Close(); err != nil {
		return err
	}
	if err := d.cli.CopyToContainer(ctx, name, "/etc", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("give the container its machine id: %w", err)
	}
	return nil
}

// createWithGuest makes the container with the guest's volume mounted, and makes sure it
// is the filled one: another paddock removing it as unused between the inspect and the
// create (the engine then makes an empty one) costs a second try.
func (d *Docker) createWithGuest(ctx context.Context, spec backend.Spec, img string, cfg *container.Config, host *container.HostConfig) error {
	name := containerName(spec.ID)
	mounts := host.Mounts
	for try := 0; ; try++ {
		vol, sum, err := d.guestVolume(ctx, spec, img)
		if err != nil {
			return err
		}
		host.Mounts = append(mounts[:len(mounts):len(mounts)], guestMount(vol))
		if _, err := d.cli.ContainerCreate(ctx, cfg, host, &network.NetworkingConfig{}, nil, name); err != nil {
			return fmt.Errorf("create container: %w", err)
		}
		ok, err := d.guestStillThere(ctx, vol, sum)
		if err == nil && ok {
			return nil
		}
		if rerr := d.cli.ContainerRemove(context.WithoutCancel(ctx), name, container.RemoveOptions{Force: true}); rerr != nil {
			return errors.Join(err, fmt.Errorf("remove the container made without its guest: %w", rerr))
		}
		if err != nil {
			return err
		}
		if try == 1 {
			return fmt.Errorf("the guest's volume %s was removed twice as the container was made: try again", vol)
		}
	}
}

// sandboxVolume mounts one of the sandbox's own volumes, which the engine makes (with
// the sandbox's labels, and what the image holds at target) when it does not exist.
func sandboxVolume(id backend.ID, what, target string, labels map[string]string) mount.Mount {
	return mount.Mount{Type: mount.TypeVolume, Source: volumeName(id, what), Target: target,
		VolumeOptions: &mount.VolumeOptions{Labels: labels}}
}

func boolPtr(b bool) *bool { return &b }

// logConfig bounds the container's log, which the engine writes on the host from
// whatever reaches its process 1's stdout and stderr: the guest's last words when it
// fails to start (`docker logs paddock-ID`), but also anything a process inside writes
// to /proc/1/fd/1, which the engine's default (json-file, no max-size) would keep
// growing until the container is removed. paddock never reads it; two files of 1 MiB at
// most are kept, whatever the engine's default driver.
var logConfig = container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "1m", "max-file": "2"}}

// Start starts the container and returns once the guest answers: on its direct channel
// when the sandbox has one, else through the exec bridge.
func (d *Docker) Start(ctx context.Context, id backend.ID) error {
	name := containerName(id)
	if err := d.mountDisk(ctx, id); err != nil {
		return err
	}
	// Starting a running container changes nothing (the engine answers 304).
	err := d.cli.ContainerStart(ctx, name, container.StartOptions{})
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("sandbox %s: %w (its container was removed: remove the sandbox and make it again)", id, backend.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("start container: %w", explainStart(err))
	}
	hasDirect := d.hasDirect(ctx, id)
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	for {
		err := d.probe(ctx, id, hasDirect && time.Since(start) < directPatience)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the guest in %s did not answer: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(probeInterval(hasDirect)):
		}
	}
}

// directPatience is how long Start waits for the guest's direct socket before it asks
// through the exec bridge as well: an engine that looked local but mounts another
// machine's directory never shows the socket here.
const directPatience = 3 * time.Second

// probeInterval is the pause between two looks for the guest: a look on the direct
// channel is a stat and at most a connection, one through the exec bridge an exec.
func probeInterval(direct bool) time.Duration {
	if direct {
		return 2 * time.Millisecond
	}
	return 20 * time.Millisecond
}

// hasDirect says whether the sandbox's guest listens on the direct channel, reading its
// container afresh (just started: a new process 1). A sandbox made without it (before
// it, or under runsc) has the exec bridge as its channel.
func (d *Docker) hasDirect(ctx context.Context, id backend.ID) bool {
	if !d.canDirect() {
		return false
	}
	p, err := d.containerProc(ctx, id, true)
	return err == nil && p.direct
}

// probe runs the handshake once: on the direct channel only, when directOnly (the guest
// is not up until its socket is), else on whichever Dial takes.
func (d *Docker) probe(ctx context.Context, id backend.ID, directOnly bool) error {
	var conn net.Conn
	var err error
	if directOnly {
		conn, err = d.dialDirect(ctx, id)
	} else {
		conn, err = d.Dial(ctx, id)
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = guestproto.ClientHandshake(conn, "probe")
	return err
}
