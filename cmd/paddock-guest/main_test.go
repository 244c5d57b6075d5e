package main

import (
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
