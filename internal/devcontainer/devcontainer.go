// Package devcontainer reads a project's .devcontainer/devcontainer.json (JSON with
// comments and trailing commas) into what paddock applies to a docker sandbox, and lists
// what it asks that paddock does not do, so that nothing is silently ignored.
package devcontainer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/shell"
)

// Config is wire.Devcontainer.
type Config = wire.Devcontainer

type file struct {
	Image        string            `json:"image"`
	DockerFile   string            `json:"dockerFile"`
	Context      string            `json:"context"`
	Build        *build            `json:"build"`
	ContainerEnv map[string]string `json:"containerEnv"`
	RemoteUser   string            `json:"remoteUser"`
	PostCreate   json.RawMessage   `json:"postCreateCommand"`
	ForwardPorts []json.RawMessage `json:"forwardPorts"`
}

type build struct {
	Dockerfile string `json:"dockerfile"`
	Context    string `json:"context"`
}

// supported are the keys paddock applies; others are reported.
var supported = map[string]bool{"name": true, "image": true, "dockerFile": true, "context": true, "build": true,
	"containerEnv": true, "remoteUser": true, "postCreateCommand": true, "forwardPorts": true, "customizations": true,
	"$schema": true}

// Find returns the project's devcontainer.json path, or "" when it has none.
func Find(repo string) string {
	for _, p := range []string{".devcontainer/devcontainer.json", ".devcontainer.json"} {
		if fi, err := os.Stat(filepath.Join(repo, p)); err == nil && fi.Mode().IsRegular() {
			return filepath.Join(repo, p)
		}
	}
	return ""
}

// Load reads a devcontainer.json. Warnings name what it asks that paddock does not do.
func Load(path string) (Config, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, nil, err
	}
	std, err := hujson.Standardize(data)
	if err != nil {
		return Config{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	var f file
	if err := json.Unmarshal(std, &f); err != nil {
		return Config{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	var all map[string]json.RawMessage
	json.Unmarshal(std, &all)
	var warnings []string
	var unknown []string
	for k := range all {
		if !supported[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		switch k {
		case "features":
			warnings = append(warnings, "features are not installed: they come from a registry, which paddock does not use; put what you need in the Dockerfile")
		case "mounts", "workspaceMount":
			warnings = append(warnings, k+" are not applied: paddock mounts no host paths into a sandbox")
		default:
			warnings = append(warnings, k+" is not supported and is ignored")
		}
	}
	dir := filepath.Dir(path)
	c := Config{Image: f.Image, RemoteUser: f.RemoteUser}
	dockerfile, context := f.DockerFile, f.Context
	if f.Build != nil {
		dockerfile, context = f.Build.Dockerfile, f.Build.Context
	}
	if dockerfile != "" {
		c.Dockerfile = filepath.Join(dir, dockerfile)
		if context == "" {
			context = "."
		}
		c.Context = filepath.Join(dir, context)
	}
	if c.Image == "" && c.Dockerfile == "" {
		return Config{}, warnings, fmt.Errorf("%s names neither an image nor a Dockerfile", path)
	}
	for k, v := range f.ContainerEnv {
		c.Env = append(c.Env, k+"="+v)
	}
	sort.Strings(c.Env)
	if c.RemoteUser != "" && c.RemoteUser != "agent" {
		warnings = append(warnings, fmt.Sprintf("remoteUser %q: paddock runs everything as the user agent (uid 1000)", c.RemoteUser))
	}
	if c.PostCreate, err = command(f.PostCreate); err != nil {
		return Config{}, warnings, fmt.Errorf("%s: postCreateCommand: %w", path, err)
	}
	for _, raw := range f.ForwardPorts {
		var n int
		var s string
		switch {
		case json.Unmarshal(raw, &n) == nil:
		case json.Unmarshal(raw, &s) == nil:
			// "host:port" or "port"; anything else is not a port and is skipped.
			if i := strings.LastIndexByte(s, ':'); i >= 0 {
				s = s[i+1:]
			}
			n, _ = strconv.Atoi(s)
		}
		if n > 0 && n < 65536 {
			c.ForwardPorts = append(c.ForwardPorts, n)
		}
	}
	return c, warnings, nil
}

// command turns a devcontainer command (a string for the shell, or an argv) into an argv.
func command(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{"sh", "-c", s}, nil
	}
	var argv []string
	if json.Unmarshal(raw, &argv) == nil {
		return argv, nil
	}
	var parallel map[string]json.RawMessage
	if json.Unmarshal(raw, &parallel) == nil {
		var parts []string
		keys := make([]string, 0, len(parallel))
		for k := range parallel {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			argv, err := command(parallel[k])
			if err != nil {
				return nil, err
			}
			parts = append(parts, shell.Join(argv))
		}
		return []string{"sh", "-c", strings.Join(parts, " && ")}, nil
	}
	return nil, fmt.Errorf("must be a string, an array or an object")
}
