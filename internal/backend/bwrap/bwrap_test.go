package bwrap_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/bwrap"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/sandbox"
)

// TestMain lets this test binary serve as the guest agent: the backend runs it inside the
// sandbox as /opt/paddock/bin/paddock, and that name makes it the paddock CLI.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "paddock" {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}

// newBackend returns a bwrap backend in a temporary directory and an installed agent,
// skipping only when bubblewrap cannot run here (CI installs it, so nothing skips there).
func newBackend(t testing.TB) (*bwrap.Bwrap, sandbox.AgentBinary) {
	t.Helper()
	dir := shortTempDir(t)
	b, err := bwrap.New(backend.Env{Dir: filepath.Join(dir, "sb")})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Available(context.Background()); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bwrap must work in CI: %v", err)
		}
		t.Skipf("bwrap is not available: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agent, err := sandbox.InstallAgent(self, filepath.Join(dir, "agent"))
	if err != nil {
		t.Fatal(err)
	}
	return b, agent
}

// shortTempDir is a temporary directory with a path short enough for unix sockets.
func shortTempDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "pdk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestConformance(t *testing.T) {
	b, agent := newBackend(t)
	backendtest.Run(t, backendtest.Harness{
		Backend: b,
		Spec: func(id backend.ID) backend.Spec {
			return backend.Spec{ID: id, Name: "conf-" + string(id), AgentBinary: agent.Path, AgentSHA256: agent.SHA256}
		},
		Leftovers: b.Leftovers,
	})
}
