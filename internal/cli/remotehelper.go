package cli

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/inside"
)

// RemoteHelperName is the name git looks for to handle paddock::SANDBOX URLs. paddock
// acts as the helper when run under this name (a symlink to the paddock binary).
const RemoteHelperName = gitsync.HelperName

// runRemoteHelper speaks git's remote-helper protocol with the "connect" capability: git
// asks for git-upload-pack (fetch) or git-receive-pack (push), and the helper joins git's
// stdin and stdout to that program running inside the sandbox, in /workspace. The
// sandbox's git serves its own repository; host git only ever reads a pack stream.
func runRemoteHelper(ctx context.Context, f *Factory, args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(f.IO.ErrOut, "git-remote-paddock: "+format+"\n", a...)
		return 128
	}
	if len(args) < 2 {
		return fail("usage: git-remote-paddock REMOTE SANDBOX (git runs it for paddock::SANDBOX URLs)")
	}
	name := strings.TrimPrefix(args[1], "paddock://")
	if err := wire.ValidateName(name); err != nil {
		return fail("%v", err)
	}
	in := bufio.NewReader(f.IO.In)
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return 0
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "capabilities":
			fmt.Fprint(f.IO.Out, "connect\n\n")
		case strings.HasPrefix(line, "connect "):
			service := strings.TrimPrefix(line, "connect ")
			argv, ok := map[string][]string{
				"git-upload-pack": {"git", "upload-pack", inside.Workspace},
				// A push may update the checked-out branch when the tree is clean.
				"git-receive-pack": {"git", "-c", "receive.denyCurrentBranch=updateInstead", "receive-pack", inside.Workspace},
			}[service]
			if !ok {
				return fail("unsupported service %q", service)
			}
			c, err := f.Client(ctx)
			if err != nil {
				return fail("%v", err)
			}
			fmt.Fprint(f.IO.Out, "\n")
			env := append([]string(nil), gitsync.SandboxGitEnv...)
			if p := f.Getenv("GIT_PROTOCOL"); p != "" {
				env = append(env, "GIT_PROTOCOL="+p)
			}
			code, err := c.Exec(ctx, name, wire.ExecRequest{Argv: argv, Env: env, Dir: inside.Workspace},
				wire.ExecIO{Stdin: in, Stdout: f.IO.Out, Stderr: f.IO.ErrOut})
			if err != nil {
				return fail("%v", err)
			}
			return code
		case line == "":
			return 0
		default:
			return fail("unsupported command %q", line)
		}
	}
}
