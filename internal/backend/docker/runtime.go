package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"

	"github.com/paddockhq/paddock/internal/backend"
)

var _ backend.RuntimeSelector = (*Docker)(nil)

// Runsc is gVisor's OCI runtime: a user-space kernel between the sandbox's processes and
// the host's, under the name setup registers it with the engine.
const Runsc = "runsc"

// runscFix says how to install and register runsc with a Docker engine. It is registered
// with --network=none, which gives the sandbox gVisor's own network stack with loopback
// only and no interface at all: the closed network paddock asks for anyway, and the only
// mode in which Debian's runsc build (2022-12) starts on kernels that namespace
// net.core.rmem_default (6.x), which it takes for the host's network namespace and
// refuses.
const runscFix = `install gVisor (sudo apt-get install runsc) and register it with dockerd: in /etc/docker/daemon.json, ` +
	`"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}}, ` +
	`then reload dockerd: sudo kill -HUP $(pidof dockerd) (make setup does both)`

// rootNetnsError is what runsc builds older than 2023 say on kernels where they mistake a
// container's network namespace for the host's.
const rootNetnsError = "cannot run with network enabled in root network namespace"

// DefaultRuntime implements backend.RuntimeSelector: the config's runtime option.
func (d *Docker) DefaultRuntime() string { return d.runtime }

// runtimeOf is the runtime a spec runs under: its own, else the config's; empty is the
// engine's default.
func (d *Docker) runtimeOf(spec backend.Spec) string {
	if spec.Runtime != "" {
		return spec.Runtime
	}
	return d.runtime
}

// CheckRuntime implements backend.RuntimeSelector: the engine must have the runtime
// registered, and runsc registered with --network=none cannot give an open network.
func (d *Docker) CheckRuntime(ctx context.Context, runtime string, openNetwork bool) error {
	info, err := d.cli.Info(ctx)
	if err != nil {
		return &backend.UnavailableError{Backend: Name, Reason: fmt.Sprintf("no Docker engine answers at %s: %v", d.cli.DaemonHost(), err),
			Fix: "start one: sudo systemctl start docker (or dockerd &)"}
	}
	rt, ok := info.Runtimes[runtime]
	if !ok {
		names := make([]string, 0, len(info.Runtimes))
		for n := range info.Runtimes {
			names = append(names, n)
		}
		sort.Strings(names)
		fix := `register it under "runtimes" in /etc/docker/daemon.json, then reload dockerd: sudo kill -HUP $(pidof dockerd)`
		if runtime == Runsc {
			fix = runscFix
		}
		return &backend.UnavailableError{Backend: Name, Fix: fix,
			Reason: fmt.Sprintf("the Docker engine has no runtime %q registered (it has: %s)", runtime, strings.Join(names, ", "))}
	}
	if openNetwork && slices.Contains(rt.Args, "--network=none") {
		return &backend.UnavailableError{Backend: Name,
			Reason: fmt.Sprintf("the engine runs %s with --network=none, so a sandbox under it has no network but its own loopback", runtime),
			Fix:    "leave out --network open (the closed network works under " + runtime + "), or leave out --runtime"}
	}
	return nil
}

// Runtimes implements backend.RuntimeSelector: whether runsc is installed on this host,
// registered with the engine, and able to start the sandbox image.
func (d *Docker) Runtimes(ctx context.Context) []backend.RuntimeReport {
	r := backend.RuntimeReport{Name: Runsc, Isolation: backend.IsolationUserKernel}
	_, lookErr := exec.LookPath(Runsc)
	info, err := d.cli.Info(ctx)
	if err != nil {
		r.Detail = "no Docker engine answers"
		return []backend.RuntimeReport{r}
	}
	rt, registered := info.Runtimes[Runsc]
	switch {
	case !registered && lookErr != nil:
		r.Detail, r.Fix = "gVisor is not installed, and the engine has no runtime runsc", runscFix
	case !registered:
		r.Detail, r.Fix = "gVisor is installed but not registered with the engine", runscFix
	default:
		err := d.probeRuntime(ctx, Runsc)
		if err != nil && !errors.Is(err, errNoStatx) {
			r.Detail, r.Fix = fmt.Sprintf("registered (%s), but it cannot start a container: %v", describeRuntime(rt.Path, rt.Args), err), runscFix
			break
		}
		r.Available = true
		r.Detail = fmt.Sprintf("gVisor, registered with the engine (%s): paddock up --runtime runsc", describeRuntime(rt.Path, rt.Args))
		if err != nil {
			r.Detail += "; " + err.Error()
		}
	}
	return []backend.RuntimeReport{r}
}

func describeRuntime(path string, args []string) string {
	return strings.Join(append([]string{path}, args...), " ")
}

// probeRuntime starts the sandbox image once under runtime with the closed network, and
// remembers the answer per runtime and image.
func (d *Docker) probeRuntime(ctx context.Context, runtime string) error {
	img, err := d.cli.ImageInspect(ctx, d.image)
	if err != nil {
		return fmt.Errorf("the sandbox image %s is missing", d.image)
	}
	key := runtime + "@" + img.ID
	d.mu.Lock()
	if err, ok := d.runtimeOK[key]; ok {
		d.mu.Unlock()
		return err
	}
	d.mu.Unlock()
	result := d.runOnce(ctx, img.ID, runtime)
	if ctx.Err() != nil {
		return result
	}
	d.mu.Lock()
	d.runtimeOK[key] = result
	d.mu.Unlock()
	return result
}

// errNoStatx is the probe's finding that the runtime refuses statx with AT_NO_AUTOMOUNT,
// as gVisor's 2022 builds do: the sandbox runs, but coreutils' ls -l and stat fail in it.
var errNoStatx = errors.New("this build refuses statx(AT_NO_AUTOMOUNT), so coreutils' `ls -l` and `stat` fail inside with \"Invalid argument\" (git, Python, Node and the agents are not affected)")

// noStatxExit is the probe's exit code for errNoStatx.
const noStatxExit = 42

func (d *Docker) runOnce(ctx context.Context, image, runtime string) error {
	probe := []string{"sh", "-c", "stat / >/dev/null 2>&1 || exit " + strconv.Itoa(noStatxExit)}
	resp, err := d.cli.ContainerCreate(ctx, &container.Config{Image: image, User: "1000:1000", Cmd: probe},
		&container.HostConfig{NetworkMode: "none", Runtime: runtime}, nil, nil, "")
	if err != nil {
		return explainStart(err)
	}
	defer d.cli.ContainerRemove(context.WithoutCancel(ctx), resp.ID, container.RemoveOptions{Force: true})
	if err := d.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return explainStart(err)
	}
	waitC, errC := d.cli.ContainerWait(ctx, resp.ID, container.WaitConditionNotRunning)
	select {
	case w := <-waitC:
		switch w.StatusCode {
		case 0:
			return nil
		case noStatxExit:
			return errNoStatx
		}
		return fmt.Errorf("a shell exited %d", w.StatusCode)
	case err := <-errC:
		return err
	}
}

// explainStart turns the engine's answer to a container that would not start into words
// a user can act on, when the cause is known.
func explainStart(err error) error {
	if err != nil && strings.Contains(err.Error(), rootNetnsError) {
		return errors.New("this runsc build mistakes the container's network namespace for the host's on this kernel; " +
			"register it with \"runtimeArgs\": [\"--network=none\"] (the closed network needs nothing more)")
	}
	return err
}

// Under runsc the host's pids limit counts the threads of gVisor's kernel, not the
// processes inside: its ptrace platform (the default of the 2022 builds) holds about five
// host threads for each process in the sandbox, and some 40 of its own. So that --pids
// still means processes inside, give or take, the engine is given runscPidsPerProcess
// times the limit plus runscPidsBase, at most half the host's pid_max. With the plain
// count a sandbox of --pids 128 could not even clone its repository.
const (
	runscPidsPerProcess = 6
	runscPidsBase       = 64
)

// hostPids is the engine's pids limit for a sandbox of pids processes under runtime.
func hostPids(runtime string, pids int64) int64 {
	if runtime != Runsc {
		return pids
	}
	n := pids*runscPidsPerProcess + runscPidsBase
	if data, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if max, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && max > 0 {
			n = min(n, max/2)
		}
	}
	return n
}

// sandboxPids is the inverse of hostPids: the processes inside a limit of host allows.
func sandboxPids(runtime string, host int64) int64 {
	if runtime != Runsc || host <= runscPidsBase {
		return host
	}
	return (host - runscPidsBase) / runscPidsPerProcess
}
