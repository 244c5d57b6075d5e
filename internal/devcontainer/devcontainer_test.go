package devcontainer

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".devcontainer"), 0o755)
	path := filepath.Join(dir, ".devcontainer", "devcontainer.json")
	os.WriteFile(path, []byte(`{
  // comments and trailing commas are fine
  "name": "demo",
  "build": { "dockerfile": "Dockerfile", "context": ".." },
  "containerEnv": { "FOO": "bar", "A": "1", },
  "remoteUser": "vscode",
  "postCreateCommand": "npm ci && echo done",
  "forwardPorts": [3000, "db:5432"],
  "features": { "ghcr.io/devcontainers/features/go:1": {} },
  "mounts": ["source=/var/run/docker.sock,target=/var/run/docker.sock,type=bind"],
}`), 0o644)
	if Find(dir) != path {
		t.Fatalf("Find = %q", Find(dir))
	}
	c, warnings, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Dockerfile: filepath.Join(dir, ".devcontainer", "Dockerfile"), Context: dir, Env: []string{"A=1", "FOO=bar"},
		RemoteUser: "vscode", PostCreate: []string{"sh", "-c", "npm ci && echo done"}, ForwardPorts: []int{3000, 5432}}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
	all := strings.Join(warnings, "\n")
	for _, w := range []string{"features are not installed", "mounts are not applied", `remoteUser "vscode"`} {
		if !strings.Contains(all, w) {
			t.Errorf("no warning %q in:\n%s", w, all)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"neither": `{"containerEnv": {}}`,
		"syntax":  `{"image": }`,
		"bad cmd": `{"image": "x", "postCreateCommand": 3}`,
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		os.WriteFile(p, []byte(content), 0o644)
		if _, _, err := Load(p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
