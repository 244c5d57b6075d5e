package docker

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	profiles "github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/paddockhq/paddock/internal/seccomp"
)

// TestSandboxProfileNarrowsDockers: the sandboxes' profile refuses by default, as
// Docker's does, allows no call under any condition that Docker's default does not
// allow under the same one, and allows none of the calls paddock's filter refuses
// outright. (KernelSurface in TestConformance sees it refuse io_uring from inside.)
func TestSandboxProfileNarrowsDockers(t *testing.T) {
	opt, err := seccompOpt()
	if err != nil {
		t.Fatal(err)
	}
	var ours profiles.Seccomp
	if err := json.Unmarshal([]byte(strings.TrimPrefix(opt, "seccomp=")), &ours); err != nil {
		t.Fatalf("the security option is no profile: %v", err)
	}
	docker := profiles.DefaultProfile()
	if ours.DefaultAction != docker.DefaultAction || ours.DefaultAction == specs.ActAllow {
		t.Fatalf("the profile's default action is %s, Docker's %s", ours.DefaultAction, docker.DefaultAction)
	}
	// A rule's condition: its action, arguments and filters; what Docker's default lets
	// through under each.
	key := func(r *profiles.Syscall) string {
		b, _ := json.Marshal([]any{r.Action, r.ErrnoRet, r.Args, r.Includes, r.Excludes})
		return string(b)
	}
	dockerAllows := map[string][]string{}
	for _, r := range docker.Syscalls {
		dockerAllows[key(r)] = append(dockerAllows[key(r)], r.Names...)
	}
	refused := seccomp.RefusedOutright()
	if !slices.Contains(refused, "io_uring_setup") {
		t.Fatalf("paddock's filter does not refuse io_uring_setup: %v", refused)
	}
	for _, r := range ours.Syscalls {
		for _, name := range r.Names {
			if !slices.Contains(dockerAllows[key(r)], name) {
				t.Errorf("the profile has %s %s where Docker's default has no such rule", r.Action, name)
			}
			if r.Action == specs.ActAllow && slices.Contains(refused, name) {
				t.Errorf("the profile allows %s, which paddock's filter refuses", name)
			}
		}
	}
}
