package backend_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	_ "github.com/paddockhq/paddock/internal/backend/bwrap"
	_ "github.com/paddockhq/paddock/internal/backend/docker"
	_ "github.com/paddockhq/paddock/internal/backend/kubernetes"
	_ "github.com/paddockhq/paddock/internal/backend/microvm"
	_ "github.com/paddockhq/paddock/internal/backend/sshhost"
	_ "github.com/paddockhq/paddock/internal/backend/vagrant"
)

// TestDescriptionsMatchMethods: every registered backend, as constructed, has the
// method for each ability its description claims and claims each it has a method for,
// and describes itself as it registered in all a configuration cannot change: the
// choices that read descriptions never meet a backend that cannot do what it says.
func TestDescriptionsMatchMethods(t *testing.T) {
	t.Parallel()
	names := backend.Names()
	if len(names) < 6 {
		t.Fatalf("only %v are registered", names)
	}
	for _, name := range names {
		b, err := backend.New(name, backend.Env{Dir: t.TempDir(), ConfigDir: t.TempDir()})
		if err != nil {
			t.Fatalf("construct %s: %v", name, err)
		}
		if err := backend.CheckMethods(b); err != nil {
			t.Error(err)
		}
		if c, ok := b.(backend.Closer); ok {
			c.Close()
		}
	}
}

// namesAllowed are the backend names that may stand as string literals outside the
// backends' packages and the registry, by file, each with why.
var namesAllowed = map[string]map[string]string{
	// The config file's [vagrant] table, from before [backends.vagrant], still read.
	"internal/config/config.go": {"vagrant": "the config's legacy key"},
	// `paddock ssh` runs the ssh client program, which is no backend.
	"internal/cli/ssh.go": {"ssh": "the ssh client program"},
}

// TestNoBackendNamesOutside: no choice outside the backends' packages tests a backend's
// name: each reads the backends' descriptions. A string literal naming a backend, or a
// runtime a backend describes, fails this unless namesAllowed lists it.
func TestNoBackendNamesOutside(t *testing.T) {
	t.Parallel()
	words := append(backend.Names(), "runsc", "firecracker", "qemu")
	re := regexp.MustCompile(`"(` + strings.Join(words, "|") + `)"`)
	root := filepath.Join("..", "..")
	var found []string
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel == "internal/backend" || strings.HasPrefix(rel, "internal/backend/") || d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "//") {
					continue
				}
				for _, m := range re.FindAllStringSubmatch(line, -1) {
					if _, ok := namesAllowed[rel][m[1]]; !ok {
						found = append(found, rel+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) > 0 {
		t.Errorf("backend names outside the backends (read the backend's description instead, or list the exception in namesAllowed):\n%s", strings.Join(found, "\n"))
	}
}
