package checkpoint

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/paddockhq/paddock/internal/archive"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/tailbuf"
)

// tarWorkspace writes an archive of the sandbox's /workspace to w, its entries relative
// to /workspace, without the sandbox's own .mcp.json (its tunnel's credentials).
func tarWorkspace(ctx context.Context, c *guestclient.Client, w io.Writer) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(c.TarOut(ctx, "/", inside.Workspace, pw)) }()
	defer pr.Close()
	return archive.Subtree(w, pr, "workspace", ".mcp.json")
}

// forkScript runs a shell script in /workspace with args as $1...; a failure says what
// it wrote.
func forkScript(ctx context.Context, c *guestclient.Client, script string, args ...string) error {
	out := &tailbuf.Buffer{Max: 2048}
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: append([]string{"sh", "-c", script, "sh"}, args...), Dir: inside.Workspace,
		Env: gitsync.SandboxGitEnv, Stdout: out, Stderr: out})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("exit %d: %s", code, strings.TrimSpace(out.String()))
	}
	return nil
}
