// Package mcp writes the MCP servers declared in the config into a sandbox, where the
// agents look for them, and says which of them the sandbox reaches on the host's loopback.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/proxy/creds"
)

// Proxy is where a sandbox reaches the credential proxy, which adds the headers of the
// http servers that declare some.
type Proxy struct {
	// Port is the credential proxy's port on the sandbox's loopback.
	Port int
	// Token authenticates the sandbox to the proxy.
	Token string
}

// onHostLoopback reports the port of an http MCP server that listens on the host's
// loopback and needs no headers: the sandbox reaches it on the same port through a
// reverse tunnel, so its URL needs no rewriting.
func onHostLoopback(m config.MCPServer) (int, bool) {
	if m.Transport != "http" || len(m.Headers) > 0 {
		return 0, false
	}
	u, err := url.Parse(m.URL)
	if err != nil || u.Scheme != "http" {
		return 0, false
	}
	switch u.Hostname() {
	case "127.0.0.1", "localhost", "::1":
	default:
		return 0, false
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		port = 80
	}
	return port, true
}

// HostPorts are the ports of the servers that listen on the host's loopback and need no
// headers, in order: each sandbox gets a reverse tunnel to each.
func HostPorts(servers map[string]config.MCPServer) []int {
	var ports []int
	for _, m := range servers {
		if port, ok := onHostLoopback(m); ok {
			ports = append(ports, port)
		}
	}
	sort.Ints(ports)
	return ports
}

// Servers is the "mcpServers" object of Claude Code's configuration for a sandbox.
func Servers(servers map[string]config.MCPServer, p Proxy) map[string]any {
	out := map[string]any{}
	for name, m := range servers {
		switch {
		case m.Transport == "stdio":
			env := m.Env
			if env == nil {
				env = map[string]string{}
			}
			args := m.Args
			if args == nil {
				args = []string{}
			}
			out[name] = map[string]any{"type": "stdio", "command": m.Command, "args": args, "env": env}
		case len(m.Headers) > 0:
			// The daemon adds the headers: the sandbox talks to its credential proxy, whose
			// route for this server leads to the server's URL.
			out[name] = map[string]any{"type": "http",
				"url":     fmt.Sprintf("http://127.0.0.1:%d%s", p.Port, creds.MCPRoute(name)),
				"headers": map[string]string{"Authorization": "Bearer " + p.Token}}
		default:
			out[name] = map[string]any{"type": "http", "url": m.URL}
		}
	}
	return out
}

// Write writes the declared MCP servers where the agents look for them: .mcp.json in
// the workspace (kept out of git through .git/info/exclude) and the user-scope
// ~/.claude.json. It returns warnings for stdio servers whose command the sandbox lacks.
func Write(ctx context.Context, c *guestclient.Client, servers map[string]config.MCPServer, p Proxy) ([]string, error) {
	if len(servers) == 0 {
		return nil, nil
	}
	obj := Servers(servers, p)
	project, _ := json.MarshalIndent(map[string]any{"mcpServers": obj}, "", "  ")
	if _, err := c.WriteFile(ctx, inside.Workspace, ".mcp.json", 0o644, false, bytes.NewReader(project)); err != nil {
		return nil, fmt.Errorf("write .mcp.json: %w", err)
	}
	if err := appendLine(ctx, c, inside.Workspace, ".git/info/exclude", ".mcp.json"); err != nil {
		return nil, err
	}
	user := map[string]any{}
	var buf bytes.Buffer
	if _, err := c.ReadFile(ctx, inside.Home, ".claude.json", &buf); err == nil {
		json.Unmarshal(buf.Bytes(), &user)
	}
	user["mcpServers"] = obj
	data, _ := json.MarshalIndent(user, "", "  ")
	if _, err := c.WriteFile(ctx, inside.Home, ".claude.json", 0o600, false, bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("write ~/.claude.json: %w", err)
	}
	var warnings []string
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m := servers[name]
		if m.Transport != "stdio" {
			continue
		}
		code, _ := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", `command -v "$1" >/dev/null`, "sh", m.Command}})
		if code != 0 {
			warnings = append(warnings, fmt.Sprintf("MCP server %s: command %q is not installed in the sandbox; it will fail until it is (install it in the image, or use a rootfs that has it)", name, m.Command))
		}
	}
	return warnings, nil
}

// appendLine adds a line to a file beneath root unless it is there already.
func appendLine(ctx context.Context, c *guestclient.Client, root, path, line string) error {
	var buf bytes.Buffer
	if _, err := c.ReadFile(ctx, root, path, &buf); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, l := range strings.Split(buf.String(), "\n") {
		if l == line {
			return nil
		}
	}
	if buf.Len() > 0 && !bytes.HasSuffix(buf.Bytes(), []byte("\n")) {
		buf.WriteByte('\n')
	}
	buf.WriteString(line + "\n")
	_, err := c.WriteFile(ctx, root, path, 0o644, true, io.Reader(&buf))
	return err
}

// npmName is what an npm package argument of npx may be: a name, with a scope and a
// version; anything else (a path, a URL, a flag) is not installed ahead.
var npmName = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*(@[A-Za-z0-9._^~<>=-]+)?$`)

// NPXPackages are the npm packages the stdio servers run with npx (`npx -y PKG ...`), in
// the servers' name order, for a machine to install ahead.
func NPXPackages(servers map[string]config.MCPServer) []string {
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		m := servers[name]
		if m.Transport != "stdio" || path.Base(m.Command) != "npx" {
			continue
		}
		for _, a := range m.Args {
			if strings.HasPrefix(a, "-") {
				continue // -y, --yes
			}
			if npmName.MatchString(a) {
				out = append(out, a)
			}
			break
		}
	}
	return out
}
