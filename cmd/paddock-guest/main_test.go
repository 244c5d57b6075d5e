package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/testenv"
)

// TestSmall: the guest links none of what only the daemon and the CLI need, so that
// every sandbox gets a small file and a small process.
func TestSmall(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", testenv.SmallGuestTags, ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, heavy := range []string{"github.com/docker/", "modernc.org/sqlite", "github.com/minio/", "github.com/anthropics/",
		"github.com/chromedp/", "charm.land/",
		"golang.org/x/net/trace", "html/template", "internal/store", "internal/sandbox", "internal/daemon", "internal/cli", "internal/api"} {
		for _, dep := range strings.Fields(string(out)) {
			if strings.Contains(dep, heavy) {
				t.Errorf("the guest links %s", dep)
			}
		}
	}
}

// TestMakefileTags: `make build` builds the guest with the tags the tests build it with
// (testenv.SmallGuestTags), so what TestSmall and the benchmarks check is what ships.
func TestMakefileTags(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	want := "GUEST_TAGS := " + testenv.SmallGuestTags + "\n"
	if !strings.Contains(string(makefile), want) {
		t.Errorf("the Makefile has no line %q", strings.TrimSpace(want))
	}
	for _, line := range strings.Split(string(makefile), "\n") {
		if strings.Contains(line, "build") && strings.HasSuffix(line, " ./cmd/paddock-guest") {
			if !strings.Contains(line, " -tags $(GUEST_TAGS) ") {
				t.Errorf("the Makefile builds the guest without -tags $(GUEST_TAGS): %s", strings.TrimSpace(line))
			}
			return
		}
	}
	t.Error("the Makefile has no line building ./cmd/paddock-guest")
}
