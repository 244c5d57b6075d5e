package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	profiles "github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/paddockhq/paddock/internal/seccomp"
)

// securityOpts are a new sandbox's security options: no-new-privileges, and paddock's
// seccomp profile under runc. Podman's Docker-compatible API takes a seccomp option for a
// file's path (it fails to create the container given the profile itself): there the
// engine's own default profile stays.
func (d *Docker) securityOpts(ctx context.Context, runtime string) ([]string, error) {
	opts := []string{"no-new-privileges"}
	if runtime == Runsc || d.isPodman(ctx) {
		return opts, nil
	}
	opt, err := seccompOpt()
	if err != nil {
		return nil, fmt.Errorf("the sandbox's seccomp profile: %w", err)
	}
	return append(opts, opt), nil
}

// isPodman says whether the engine is Podman, by the components of its version; an
// engine that cannot answer is taken for Docker, and asked again next time.
func (d *Docker) isPodman(ctx context.Context) bool {
	d.mu.Lock()
	known, podman := d.podmanKnown, d.podman
	d.mu.Unlock()
	if known {
		return podman
	}
	v, err := d.cli.ServerVersion(ctx)
	if err != nil {
		return false
	}
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			podman = true
		}
	}
	d.mu.Lock()
	d.podmanKnown, d.podman = true, podman
	d.mu.Unlock()
	return podman
}

// seccompOpt is the security option that gives a sandbox under runc paddock's seccomp
// profile instead of the engine's own. The engine's default depends on its version
// (Docker Engine before 25, Debian 12's 20.10 among them, lets io_uring through); this
// one is the same whatever the engine: Docker's current default profile (from
// github.com/moby/profiles, an allowlist: a call it does not name is refused, and the
// calls it allows only with a capability stay refused, every capability being dropped),
// with every call paddock's own filter refuses by name (internal/seccomp: io_uring,
// keyrings, eBPF, perf events, userfaultfd, mounts, setns, modules, kexec, the clock,
// file handles...) taken out of what it allows. Under runsc it is not given: gVisor's
// kernel serves the sandbox's calls, and a runsc registered without --oci-seccomp would
// ignore it.
var seccompOpt = sync.OnceValues(func() (string, error) {
	b, err := json.Marshal(sandboxProfile())
	if err != nil {
		return "", err
	}
	return "seccomp=" + string(b), nil
})

// sandboxProfile is Docker's default profile less the calls paddock's filter refuses
// outright: those names leave every rule that allows, and a rule left with no name goes.
func sandboxProfile() *profiles.Seccomp {
	p := profiles.DefaultProfile()
	refused := seccomp.RefusedOutright()
	rules := make([]*profiles.Syscall, 0, len(p.Syscalls))
	for _, r := range p.Syscalls {
		if r.Action == specs.ActAllow {
			r.Names = slices.DeleteFunc(slices.Clone(r.Names), func(n string) bool { return slices.Contains(refused, n) })
			//lint:ignore SA1019 a profile may still name its one syscall the old way (Name); such a rule stays
			if len(r.Names) == 0 && r.Name == "" {
				continue
			}
		}
		rules = append(rules, r)
	}
	p.Syscalls = rules
	return p
}
