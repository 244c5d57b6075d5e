package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/inside"
)

func newCmdWorktree(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worktree",
		Short: "Git worktrees inside a sandbox, at /workspace/.worktrees/BRANCH",
		Long: `Worktrees let several sessions work on different branches of one sandbox at once:
  paddock worktree add myrepo feature-x         /workspace/.worktrees/feature-x on a new branch
  paddock chat myrepo --new fx --worktree feature-x
  paddock sync myrepo                           brings its branch and its uncommitted work
                                                (refs/paddock/myrepo/wip-feature-x)`,
	}
	var from string
	var force, asJSON bool
	add := &cobra.Command{
		Use:   "add SANDBOX BRANCH",
		Short: "Add a worktree on BRANCH (made from --from, default HEAD, if it does not exist)",
		Args:  exactArgs(2, "a sandbox and a branch"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wire.ValidateName(args[1]); err != nil {
				return err
			}
			script := `set -e
cd /workspace
grep -qx '.worktrees/' .git/info/exclude 2>/dev/null || echo '.worktrees/' >> .git/info/exclude
if git show-ref --verify -q "refs/heads/$1"; then git worktree add -q "$2" "$1"; else git worktree add -q -b "$1" "$2" "$3"; fi`
			start := from
			if start == "" {
				start = "HEAD"
			}
			return sandboxScript(cmd.Context(), f, args[0], script, args[1], wire.WorktreeDir(args[1]), start,
				fmt.Sprintf("paddock: worktree %s at %s\n", args[1], wire.WorktreeDir(args[1])))
		},
	}
	add.Flags().StringVar(&from, "from", "", "the commit a new branch starts from (default HEAD)")
	rm := &cobra.Command{
		Use:   "rm SANDBOX BRANCH",
		Short: "Remove a worktree (its branch stays); --force if it has uncommitted work",
		Args:  exactArgs(2, "a sandbox and a branch"),
		RunE: func(cmd *cobra.Command, args []string) error {
			script := `cd /workspace && git worktree remove $4 "$2"`
			flag := ""
			if force {
				flag = "--force"
			}
			return sandboxScript(cmd.Context(), f, args[0], script, args[1], wire.WorktreeDir(args[1]), "", flag,
				fmt.Sprintf("paddock: removed worktree %s\n", args[1]))
		},
	}
	rm.Flags().BoolVar(&force, "force", false, "remove it even with uncommitted work")
	ls := &cobra.Command{
		Use:   "ls SANDBOX",
		Short: "List the sandbox's worktrees: BRANCH PATH HEAD",
		Args:  exactArgs(1, "a sandbox"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := f.Client(ctx)
			if err != nil {
				return err
			}
			var out, errOut strings.Builder
			code, err := c.Exec(ctx, args[0], wire.ExecRequest{Argv: []string{"git", "-C", inside.Workspace, "worktree", "list", "--porcelain"}, Env: gitsync.SandboxGitEnv},
				wire.ExecIO{Stdout: &out, Stderr: &errOut})
			if err != nil {
				return err
			}
			if code != 0 {
				return fmt.Errorf("git worktree list: %s", strings.TrimSpace(errOut.String()))
			}
			type wt struct {
				Branch string `json:"branch"`
				Path   string `json:"path"`
				Head   string `json:"head"`
			}
			var list []wt
			for _, block := range strings.Split(strings.TrimSpace(out.String()), "\n\n") {
				var w wt
				for _, line := range strings.Split(block, "\n") {
					k, v, _ := strings.Cut(line, " ")
					switch k {
					case "worktree":
						w.Path = v
					case "HEAD":
						w.Head = v
					case "branch":
						w.Branch = strings.TrimPrefix(v, "refs/heads/")
					}
				}
				if strings.HasPrefix(w.Path, inside.Workspace+"/.worktrees/") {
					list = append(list, w)
				}
			}
			if asJSON {
				if list == nil {
					list = []wt{}
				}
				return writeJSON(f, list)
			}
			for _, w := range list {
				fmt.Fprintf(f.IO.Out, "%s\t%s\t%s\n", w.Branch, w.Path, gitsync.Short(w.Head))
			}
			return nil
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(add, rm, ls)
	return cmd
}

// sandboxScript runs a shell script in a sandbox with args; on success it prints done.
func sandboxScript(ctx context.Context, f *Factory, name, script string, args ...string) error {
	done := args[len(args)-1]
	args = args[:len(args)-1]
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	var out strings.Builder
	// With the sandbox's hooks and fsmonitor off, as every git command paddock runs there:
	// what the agent configured must not break (or ride on) paddock's own work.
	code, err := c.Exec(ctx, name, wire.ExecRequest{Argv: append([]string{"sh", "-c", script, "sh"}, args...), Env: gitsync.SandboxGitEnv},
		wire.ExecIO{Stdout: &out, Stderr: &out})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("%s", strings.TrimSpace(out.String()))
	}
	fmt.Fprint(f.IO.ErrOut, done)
	return nil
}
