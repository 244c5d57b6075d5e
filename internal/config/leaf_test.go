package config

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLeaf: the config imports only leaf packages of paddock (ones that import no other),
// so that every client reading it (the CLI, the TUI, the lean front) does without the
// daemon's state (SQLite), the meter, the proxies and the backends.
func TestLeaf(t *testing.T) {
	t.Parallel()
	const module = "github.com/paddockhq/paddock/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if !strings.HasPrefix(f[0], module) || f[0] == module+"internal/config" {
			continue
		}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				t.Errorf("the config imports %s, which imports %s: move what the config needs of it into a leaf package (as internal/config/cost)", f[0], imp)
			}
		}
	}
	if strings.Contains(string(out), "modernc.org/sqlite") {
		t.Error("the config links SQLite")
	}
}
