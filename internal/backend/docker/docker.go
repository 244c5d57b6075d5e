// Package docker runs sandboxes as Docker (or Podman, through its Docker-compatible
// socket) containers, through the Engine API: never the docker CLI. A container has no
// network by default (the closed-network tunnels work unchanged), runs as the non-root
// user agent, keeps /workspace and /home/agent on volumes that survive stop and start,
// and has the guest as its long-lived process, run from a read-only volume shared by
// every sandbox of the same guest, listening on unix sockets. Dial connects to the one
// in a small tmpfs of the container, through the container's root as the host sees it
// (direct.go), when the engine is local, and otherwise attaches to an exec of `paddock
// guest connect`, which bridges to the one inside.
package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"

	errdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/inside"
)

// Name is the registry name.
const Name = "docker"

// description is what the backend is: a container, second to bwrap as the default and
// as a host's offer to another machine's daemon; it builds images and Dockerfiles, and
// runs them under the OCI runtime asked for.
var description = backend.Description{Isolation: backend.IsolationContainer, Default: 2, Serves: true,
	Lists: true, Limits: true, DiskLimit: true, Images: backend.Images{Build: true, Dockerfile: true}, Runtimes: true,
	Tools: []backend.Tool{{Name: "docker", Argv: []string{"docker", "version", "--format", "{{.Server.Version}}"}},
		{Name: Runsc, Argv: []string{Runsc, "--version"}, Runtime: Runsc}}}

func init() {
	backend.Register(Name, description, func(env backend.Env) (backend.Backend, error) { return New(env) })
}

// DefaultImage is the image `paddock image build` makes.
const DefaultImage = "paddock/sandbox:latest"

// Label marks paddock's containers and volumes with the sandbox ID.
const Label = "dev.paddock.sandbox"

const (
	guestPath   = inside.GuestBinary
	guestSocket = inside.GuestSocket
)

// Docker is the backend.
type Docker struct {
	cli   *client.Client
	image string
	// runtime is the engine's OCI runtime for sandboxes whose spec names none (the
	// config's runtime option); empty means the engine's default.
	runtime string
	// dir is the backend's own directory on the host (Env.Dir), which holds the
	// sandboxes' direct channels; empty means none.
	dir string

	mu        sync.Mutex
	usable    map[string]error          // image ID → what the image lacks, nil when usable
	runtimeOK map[string]error          // runtime@image ID → why it cannot start, nil when it can
	procs     map[backend.ID]directProc // sandbox → its container's process 1, as last seen
	// containers is each running sandbox's container ID as State or States last read it;
	// limits are the limits read of a sandbox's container, kept for that container's
	// life (paddock never changes a container's limits: a new container is a new ID).
	containers map[backend.ID]string
	limits     map[backend.ID]readLimits
	hereKnown  bool // whether here is known
	here       bool // the engine runs on this machine, without user remapping
	// podman says the engine is Podman (its Docker-compatible API), once podmanKnown.
	podmanKnown, podman bool

	guestMu   sync.Mutex        // one guest volume made or checked at a time
	guestVols map[string]string // guest volume → its CreatedAt, once its content was checked
}

var (
	_ backend.Backend           = (*Docker)(nil)
	_ backend.Lister            = (*Docker)(nil)
	_ backend.ImageBuilder      = (*Docker)(nil)
	_ backend.DockerfileBuilder = (*Docker)(nil)
	_ backend.RuntimeSelector   = (*Docker)(nil)
)

// New constructs the backend; DOCKER_HOST and friends are honoured. Options: image,
// runtime (the engine's OCI runtime, e.g. "runsc" for gVisor). Sandboxes get the direct
// channel when env.Dir is set, the daemon runs as root and the engine answers on a local
// unix socket, runs on this machine and remaps no users.
func New(env backend.Env) (*Docker, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	d := &Docker{cli: cli, image: DefaultImage, dir: env.Dir, usable: map[string]error{}, runtimeOK: map[string]error{},
		procs: map[backend.ID]directProc{}, guestVols: map[string]string{},
		containers: map[backend.ID]string{}, limits: map[backend.ID]readLimits{}}
	if v, ok := env.Options["image"].(string); ok && v != "" {
		d.image = v
	}
	if v, ok := env.Options["runtime"].(string); ok {
		d.runtime = v
	}
	return d, nil
}

// Name implements backend.Backend.
func (d *Docker) Name() string { return Name }

// Describe implements backend.Backend: under gVisor when the config makes runsc the
// default runtime.
func (d *Docker) Describe() backend.Description {
	desc := description
	if d.runtime == Runsc {
		desc.Isolation = backend.IsolationUserKernel
	}
	return desc
}

// Available pings the engine and checks the default image exists.
func (d *Docker) Available(ctx context.Context) error {
	if _, err := d.cli.Ping(ctx); err != nil {
		return &backend.UnavailableError{Backend: Name, Reason: fmt.Sprintf("no Docker engine answers at %s: %v", d.cli.DaemonHost(), err),
			Fix: "start one: sudo systemctl start docker (or dockerd &); for Podman, set DOCKER_HOST=unix:///run/user/$UID/podman/podman.sock"}
	}
	img, err := d.cli.ImageInspect(ctx, d.image)
	if err != nil {
		return &backend.UnavailableError{Backend: Name, Reason: fmt.Sprintf("the sandbox image %s is missing", d.image),
			Fix: "build it: paddock image build"}
	}
	if err := d.checkImage(ctx, img.ID); err != nil {
		return &backend.UnavailableError{Backend: Name, Reason: fmt.Sprintf("the sandbox image %s %v", d.image, err),
			Fix: "build it again: paddock image build, or use an image that has bash and git"}
	}
	return nil
}

// checkImage runs the image once (no network) to see it has what a sandbox needs: bash
// and git. The answer is kept per image ID.
func (d *Docker) checkImage(ctx context.Context, id string) error {
	d.mu.Lock()
	if err, ok := d.usable[id]; ok {
		d.mu.Unlock()
		return err
	}
	d.mu.Unlock()
	resp, err := d.cli.ContainerCreate(ctx, &container.Config{Image: id, User: "1000:1000",
		Cmd: []string{"sh", "-c", "command -v bash >/dev/null || exit 3; command -v git >/dev/null || exit 4"}},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		return fmt.Errorf("cannot be run: %w", err)
	}
	defer d.cli.ContainerRemove(context.WithoutCancel(ctx), resp.ID, container.RemoveOptions{Force: true})
	if err := d.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return fmt.Errorf("cannot be run: %w", err)
	}
	waitC, errC := d.cli.ContainerWait(ctx, resp.ID, container.WaitConditionNotRunning)
	var result error
	select {
	case w := <-waitC:
		switch w.StatusCode {
		case 0:
		case 3:
			result = errors.New("has no bash")
		case 4:
			result = errors.New("has no git")
		default:
			result = fmt.Errorf("cannot run sh as uid 1000 (exit %d)", w.StatusCode)
		}
	case err := <-errC:
		return fmt.Errorf("cannot be run: %w", err)
	}
	d.mu.Lock()
	d.usable[id] = result
	d.mu.Unlock()
	return result
}

func containerName(id backend.ID) string { return "paddock-" + string(id) }
func volumeName(id backend.ID, what string) string {
	return "paddock-" + string(id) + "-" + what
}

// State implements backend.Backend.
func (d *Docker) State(ctx context.Context, id backend.ID) (backend.Status, error) {
	c, err := d.cli.ContainerInspect(ctx, containerName(id))
	if errdefs.IsNotFound(err) {
		d.seen(id, "")
		return backend.Status{State: backend.StateMissing}, nil
	}
	if err != nil {
		return backend.Status{}, err
	}
	if c.State.Running {
		d.seen(id, c.ID)
		d.keepLimits(id, c)
	} else {
		d.seen(id, "")
	}
	return containerStatus(c.State.Running, c.State.Status), nil
}

var _ backend.Lister = (*Docker)(nil)

// States implements backend.Lister: one list of the engine's paddock containers.
func (d *Docker) States(ctx context.Context) (map[backend.ID]backend.Status, error) {
	cs, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", Label))})
	if err != nil {
		return nil, err
	}
	out := make(map[backend.ID]backend.Status, len(cs))
	containers := make(map[backend.ID]string, len(cs))
	for _, c := range cs {
		id := backend.ID(c.Labels[Label])
		if id == "" || !slices.Contains(c.Names, "/"+containerName(id)) {
			continue
		}
		running := c.State == container.StateRunning
		out[id] = containerStatus(running, string(c.State))
		if running {
			containers[id] = c.ID
		}
	}
	d.mu.Lock()
	d.containers = containers
	for id, l := range d.limits {
		if l.container != containers[id] {
			delete(d.limits, id)
		}
	}
	d.mu.Unlock()
	return out, nil
}

// containerStatus is a sandbox's state from its container's: running, made and never
// started, or anything else (exited, dead, paused...) said in the detail.
func containerStatus(running bool, status string) backend.Status {
	switch {
	case running:
		return backend.Status{State: backend.StateRunning}
	case status == "created":
		return backend.Status{State: backend.StateCreated}
	}
	return backend.Status{State: backend.StateStopped, Detail: status}
}

// seen notes a running sandbox's container ID as just read from the engine; empty when
// it has none, or it does not run.
func (d *Docker) seen(id backend.ID, containerID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if containerID == "" {
		delete(d.containers, id)
		delete(d.limits, id)
		return
	}
	d.containers[id] = containerID
}

// Stop implements backend.Backend.
func (d *Docker) Stop(ctx context.Context, id backend.ID) error {
	d.seen(id, "")
	timeout := 5
	err := d.cli.ContainerStop(ctx, containerName(id), container.StopOptions{Timeout: &timeout})
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("sandbox %s: %w", id, backend.ErrNotFound)
	}
	return err
}

// Destroy removes the container, its volumes and the socket directory an older paddock
// made for it on the host.
func (d *Docker) Destroy(ctx context.Context, id backend.ID) error {
	err := d.cli.ContainerRemove(ctx, containerName(id), container.RemoveOptions{Force: true})
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove container: %w", err)
	}
	d.mu.Lock()
	delete(d.procs, id)
	d.mu.Unlock()
	d.seen(id, "")
	for _, v := range []string{"workspace", "home"} {
		if err := d.cli.VolumeRemove(ctx, volumeName(id, v), true); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("remove volume: %w", err)
		}
	}
	if err := d.removeDisk(id); err != nil {
		return err
	}
	return d.removeDirectDir(id)
}

// Leftovers lists containers and volumes of a sandbox that still exist.
func (d *Docker) Leftovers(id backend.ID) []string {
	ctx := context.Background()
	var out []string
	f := filters.NewArgs(filters.Arg("label", Label+"="+string(id)))
	// An engine that cannot answer is itself a leftover to report: an empty list would
	// pass the check it feeds while proving nothing.
	cs, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		out = append(out, "containers not listed: "+err.Error())
	}
	for _, c := range cs {
		out = append(out, "container "+c.ID[:12])
	}
	vs, err := d.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		out = append(out, "volumes not listed: "+err.Error())
	}
	for _, v := range vs.Volumes {
		out = append(out, "volume "+v.Name)
	}
	if dir := d.directDir(id); dir != "" {
		if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
			out = append(out, "directory "+dir)
		}
	}
	return append(out, d.diskLeftovers(id)...)
}

// Dial implements backend.Backend: the direct channel when the sandbox has one that
// passes its checks, else the exec bridge.
func (d *Docker) Dial(ctx context.Context, id backend.ID) (net.Conn, error) {
	if c, err := d.dialDirect(ctx, id); err == nil {
		return c, nil
	}
	return d.dial(ctx, containerName(id))
}
