package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/docker"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/sandbox"
)

// TestMain lets this test binary serve as the guest agent inside containers.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "paddock" {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}

func TestConformance(t *testing.T) {
	b, err := docker.New(backend.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Available(context.Background()); err != nil {
		if os.Getenv("PADDOCK_TEST_DOCKER") != "" {
			t.Fatalf("docker must work here: %v", err)
		}
		t.Skipf("docker is not available: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agent, err := sandbox.InstallAgent(self, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	backendtest.Run(t, backendtest.Harness{
		Backend: b,
		Spec: func(id backend.ID) backend.Spec {
			return backend.Spec{ID: id, Name: "conf-" + string(id), AgentBinary: agent.Path, AgentSHA256: agent.SHA256}
		},
		Leftovers: b.Leftovers,
	})
}
