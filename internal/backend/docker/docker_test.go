package docker_test

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/docker"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/testenv"
)

// smallGuest is the small guest (cmd/paddock-guest), as the daemon injects it, in a
// directory of the test. Its hash changes only with the guest's code, so the engine keeps
// one guest volume across test runs, not one per test binary.
func smallGuest(tb testing.TB) sandbox.AgentBinary {
	tb.Helper()
	path, err := testenv.SmallGuest()
	if err != nil {
		tb.Fatal(err)
	}
	agent, err := sandbox.InstallAgent(path, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return agent
}

// TestConformance runs the suite on sandboxes reached through their direct channel (the
// backend has a directory and runs as root here), the exec bridge where they cannot be.
func TestConformance(t *testing.T) {
	b, err := docker.New(backend.Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Available(context.Background()); err != nil {
		if testenv.Strict() {
			t.Fatalf("docker must work here: %v", err)
		}
		t.Skipf("docker is not available: %v", err)
	}
	agent := smallGuest(t)
	backendtest.Run(t, backendtest.Harness{
		Backend: b,
		Spec: func(id backend.ID) backend.Spec {
			return backend.Spec{ID: id, Name: "conf-" + string(id), AgentBinary: agent.Path, AgentSHA256: agent.SHA256}
		},
		Leftovers: b.Leftovers,
		Allows:    engineAllows(t),
	})
}

// engineAllows is what the engine's default seccomp profile lets through that the
// conformance suite's kernel check refuses: io_uring before Docker Engine 25.0, whose
// profile refuses it.
func engineAllows(t *testing.T) map[string]string {
	out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").Output()
	if err != nil {
		t.Logf("the engine's version is unknown (%v): expecting every call refused", err)
		return nil
	}
	version := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(version, ".")
	if n, err := strconv.Atoi(major); err != nil || n >= 25 {
		return nil
	}
	return map[string]string{"io_uring_setup": "the default seccomp profile of Docker Engine " + version + " allows io_uring (25.0 refuses it)"}
}
