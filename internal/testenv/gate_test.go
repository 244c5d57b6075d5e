package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// setupProgram matches a test starting one of the programs make setup installs by name.
var setupProgram = regexp.MustCompile(`exec\.Command(Context)?\((ctx, )?"(bwrap|docker|tmux|qemu-system-x86_64|vagrant|kubectl|chromium|minio|sshd|ssh|claude|codex|gemini|qwen|opencode|runsc|mmdebstrap|mke2fs)"`)

// TestToolsGoThroughTheGate: a package whose tests start a program make setup installs
// links this package, the gate, so that make test runs it each time rather than from Go's
// test cache, which cannot see that program's state (scripts/test.sh, docs/testing.md).
func TestToolsGoThroughTheGate(t *testing.T) {
	goTool := Program(t, "go", "https://go.dev/dl")
	cmd := exec.Command(goTool, "list", "-test", "-f", `{{if eq .Name "main"}}{{.ImportPath}} {{.Dir}} {{join .Deps " "}}{{end}}`, "github.com/paddockhq/paddock/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const gate = "github.com/paddockhq/paddock/internal/testenv"
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasSuffix(f[0], ".test") {
			continue
		}
		pkg := strings.TrimSuffix(f[0], ".test")
		gated := pkg == gate
		for _, dep := range f[2:] {
			gated = gated || dep == gate
		}
		// go list names the test main's own directory: the package's is its import path's.
		dir := filepath.Join(moduleRoot(t), strings.TrimPrefix(pkg, "github.com/paddockhq/paddock"))
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		for _, file := range files {
			checked++
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if m := setupProgram.FindSubmatch(src); m != nil && !gated {
				t.Errorf("%s starts %s but %s does not link %s: gate it with testenv.Program", file, m[3], pkg, gate)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d test files read: this check checks nothing", checked)
	}
}

// moduleRoot is the directory of go.mod, two up from this package's.
func moduleRoot(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}
