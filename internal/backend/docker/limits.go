package docker

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	errdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/paddockhq/paddock/internal/backend"
)

var (
	_ backend.LimitReader = (*Docker)(nil)
	_ backend.Reporter    = (*Docker)(nil)
)

// tmpfsMounts are the container's /tmp (half its memory) and /run (64 MiB), sized like a
// bwrap sandbox's; /dev/shm is the engine's 64 MiB.
func tmpfsMounts(l backend.Limits) map[string]string {
	return map[string]string{
		"/run": "mode=0755,uid=1000,gid=1000,size=64m",
		"/tmp": "mode=1777,size=" + strconv.FormatInt(l.MemoryBytes/2, 10),
	}
}

// Limits implements backend.LimitReader: the container's resources as the engine holds
// them, read once per container (State and States say which container a sandbox has).
func (d *Docker) Limits(ctx context.Context, id backend.ID) (backend.Limits, error) {
	d.mu.Lock()
	kept, ok := d.limits[id]
	ok = ok && kept.container == d.containers[id]
	d.mu.Unlock()
	if ok {
		return kept.limits, kept.err
	}
	c, err := d.cli.ContainerInspect(ctx, containerName(id))
	if errdefs.IsNotFound(err) {
		d.seen(id, "")
		return backend.Limits{}, fmt.Errorf("sandbox %s: %w", id, backend.ErrNotFound)
	}
	if err != nil {
		return backend.Limits{}, fmt.Errorf("limits of sandbox %s: %w", id, err)
	}
	if c.State == nil || !c.State.Running {
		d.seen(id, "")
		return backend.Limits{}, fmt.Errorf("limits of sandbox %s: %w", id, backend.ErrNotRunning)
	}
	d.seen(id, c.ID)
	l := d.keepLimits(id, c)
	return l.limits, l.err
}

// readLimits is what Limits answers for one container.
type readLimits struct {
	container string
	limits    backend.Limits
	err       error
}

// keepLimits reads a running container's limits from its inspection and keeps them.
func (d *Docker) keepLimits(id backend.ID, c container.InspectResponse) readLimits {
	r := c.HostConfig.Resources
	l := readLimits{container: c.ID, limits: backend.Limits{CPUs: float64(r.NanoCPUs) / 1e9, MemoryBytes: r.Memory}}
	if r.PidsLimit != nil {
		l.limits.Pids = sandboxPids(c.HostConfig.Runtime, *r.PidsLimit)
	}
	if l.limits.CPUs == 0 || l.limits.MemoryBytes == 0 || l.limits.Pids <= 0 {
		l.err = &backend.LimitsNotEnforcedError{Reason: "its container was made without them (" + l.limits.String() + ")",
			Fix: "make the sandbox again: paddock up --fresh"}
	} else if n, err := d.diskLimit(id); err != nil {
		l.err = err
	} else {
		l.limits.DiskBytes = n
	}
	d.mu.Lock()
	d.limits[id] = l
	d.mu.Unlock()
	return l
}

// Report implements backend.Reporter: what the engine can enforce, and the disk.
func (d *Docker) Report(ctx context.Context) []backend.Finding {
	info, err := d.cli.Info(ctx)
	if err != nil {
		return nil // Available says the engine does not answer
	}
	limits := backend.Finding{Topic: "limits", OK: true,
		Text: fmt.Sprintf("enforced by the engine (cgroup v%s); each sandbox gets %s unless `up --cpus/--memory/--pids` say otherwise, and a /tmp of half its memory",
			orUnknown(info.CgroupVersion), backend.LimitsFor(backend.Spec{}))}
	var missing []string
	for _, c := range []struct {
		name string
		ok   bool
	}{{"memory", info.MemoryLimit}, {"swap", info.SwapLimit}, {"pids", info.PidsLimit}, {"cpu quota", info.CPUCfsQuota}} {
		if !c.ok {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		limits.OK = false
		limits.Text = "the engine cannot limit " + strings.Join(missing, ", ") + " here: sandboxes are not bounded in those"
		limits.Fix = "enable the kernel's cgroup controllers for them (for swap on cgroup v1: boot with swapaccount=1)"
	}
	quota := backend.DiskFinding(orUnknown(info.DockerRootDir), d.CanLimitDisk(ctx), "")
	return []backend.Finding{limits, quota}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
