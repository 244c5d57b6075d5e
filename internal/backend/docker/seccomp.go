package docker

import (
	"encoding/json"
	"slices"
	"sync"

	profiles "github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/paddockhq/paddock/internal/seccomp"
)

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
			if len(r.Names) == 0 && r.Name == "" {
				continue
			}
		}
		rules = append(rules, r)
	}
	p.Syscalls = rules
	return p
}
