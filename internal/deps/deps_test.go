package deps_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/testenv"
)

const module = "github.com/paddockhq/paddock/"

// server are the server's packages: the daemon and what only it runs (the sandboxes and
// their sessions, the backends, the state, the meter, the proxies, the event log, the
// host's side of the guest protocol, paddock's own agent loop, the parsers of the
// agents' transcripts). A path ending in "/" names its subpackages too; "internal/api"
// is the API's server alone, not its wire (internal/api/wire).
var server = []string{
	"internal/daemon", "internal/api", "internal/servecmd",
	"internal/sandbox", "internal/session", "internal/store", "internal/metering", "internal/runs",
	"internal/backend", "internal/backend/", "internal/proxy/", "internal/snapshot", "internal/snapshot/",
	"internal/flightrec", "internal/events", "internal/netpolicy", "internal/notify", "internal/alarm",
	"internal/autosync", "internal/imagebuild", "internal/doctor", "internal/lastread", "internal/mcp",
	"internal/guestclient", "internal/guestclient/", "internal/hostagent", "internal/hostgit",
	"internal/transcript", "internal/ghauth",
	// The libraries only the server links: Docker's and Kubernetes' clients, SQLite, S3,
	// the model's client.
	"github.com/docker/", "k8s.io/", "modernc.org/sqlite", "github.com/minio/", "github.com/anthropics/",
}

// guest is the guest's own code, which the full program links to be injected as the
// guest but a client has no use for.
var guest = []string{"internal/guest", "internal/guestcmd"}

// client are the clients' packages, which the server does not link: it knows nothing of
// its clients but the wire.
var client = []string{"internal/cli", "internal/tui", "internal/tui/", "internal/front", "internal/lscmd",
	"internal/synccmd", "internal/api/client"}

// full are the full program's packages beyond the server's, which neither the lean front
// nor the guest links: the CLI's commands, the TUI, the web UI's files.
var full = []string{"internal/cli", "internal/tui", "internal/tui/", "internal/webui"}

// guestOnly is what the guest, the small program in every sandbox, must not link beyond
// the server's and the full program's packages: the API's client and wire, the front, the TUI's and the
// browser's libraries, cobra, and the network stacks it has no use for.
var guestOnly = []string{
	"internal/api/", "internal/front", "internal/lscmd", "internal/synccmd",
	"github.com/chromedp/", "charm.land/", "github.com/spf13/cobra",
	"google.golang.org/grpc", "google.golang.org/protobuf", "golang.org/x/net/http2",
	"net/http", "net/http/", "crypto/tls", "html/template",
}

// TestTowers: the clients (the CLI, the TUI, the lean front, the web UI's Go side, the
// API's client) link the API's client and wire and none of the server's packages, and
// the server (the daemon and all it links) none of the clients'; the lean front
// (cmd/paddock) links none of the full program's either, so that it starts in a few
// milliseconds; and the guest (cmd/paddock-guest) links only what a sandbox needs, so
// that every sandbox gets a small file and a small process. A failure names the chain of
// imports that brought the package in.
func TestTowers(t *testing.T) {
	testenv.Program(t, "go", "install Go")
	sides := []struct {
		name, what string
		roots      []string
		forbidden  []string
	}{
		{"the client", "a package of the server or the guest", []string{"internal/cli", "internal/tui", "internal/front", "internal/webui", "internal/lscmd", "internal/synccmd", "internal/api/wire", "internal/api/client"}, slices.Concat(server, guest)},
		{"the server", "a client's package", []string{"internal/daemon"}, client},
		{"the lean front", "a package of the server or the full program", []string{"cmd/paddock"}, slices.Concat(server, full)},
		{"the guest", "a package a sandbox has no use for", []string{"cmd/paddock-guest"}, slices.Concat(server, full, guestOnly)},
	}
	var roots []string
	for _, s := range sides {
		roots = append(roots, s.roots...)
	}
	imports := importGraph(t, roots)
	for _, s := range sides {
		for _, root := range s.roots {
			for _, v := range violations(imports, root, s.forbidden) {
				t.Errorf("%s links %s, %s: %s", s.name, v[len(v)-1], s.what, strings.Join(v, " -> "))
			}
		}
	}
}

// importGraph is each package's imports, for the roots and all they link, with the
// module's own packages named relative to the module ("internal/cli").
func importGraph(t *testing.T, roots []string) map[string][]string {
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}
	for _, r := range roots {
		args = append(args, module+r)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(strings.ReplaceAll(line, module, ""))
		graph[f[0]] = f[1:]
	}
	return graph
}

// violations walks root's imports breadth first and gives, for each forbidden package
// reached, the shortest chain of imports to it. It does not walk on through a forbidden
// package, so each chain ends where the side first crosses into what it must not link.
func violations(graph map[string][]string, root string, forbidden []string) [][]string {
	chain := map[string][]string{root: {root}}
	queue := []string{root}
	var found [][]string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, dep := range graph[p] {
			if _, seen := chain[dep]; seen {
				continue
			}
			chain[dep] = append(slices.Clone(chain[p]), dep)
			if matches(dep, forbidden) {
				found = append(found, chain[dep])
				continue
			}
			queue = append(queue, dep)
		}
	}
	return found
}

// matches says whether pkg is one of the paths, or under one ending in "/".
func matches(pkg string, paths []string) bool {
	for _, p := range paths {
		if pkg == p || strings.HasSuffix(p, "/") && strings.HasPrefix(pkg, p) {
			return true
		}
	}
	return false
}
