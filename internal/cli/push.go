package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/apperr"
)

func newCmdPush(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "push SANDBOX [REF...]",
		Short: "Push host commits into the sandbox: a fast-forward of its branches or new branches",
		Long: `Push host branches (default: the current one) into the sandbox's repository. A branch
moves only by fast-forward; the checked-out branch is updated only if the sandbox's working tree is
clean. Host git runs with hooks off.`,
		Args: minArgs(1, "a sandbox, then the refs to push (default: the current branch)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := f.Client(ctx)
			if err != nil {
				return err
			}
			info, err := c.Get(ctx, args[0])
			if err != nil {
				return err
			}
			g, err := hostRepo(ctx, f, info)
			if err != nil {
				return err
			}
			refs := args[1:]
			if len(refs) == 0 {
				cur, err := g.Run(ctx, "symbolic-ref", "--short", "-q", "HEAD")
				if err != nil || strings.TrimSpace(cur) == "" {
					return usagef("the host repository is on a detached HEAD: name the branch to push")
				}
				refs = []string{strings.TrimSpace(cur)}
			}
			var specs []string
			for _, r := range refs {
				if strings.HasPrefix(r, "+") {
					return usagef("push only fast-forwards: %q asks to force", r)
				}
				src, dst, ok := strings.Cut(r, ":")
				if !ok {
					dst = src
				}
				if !strings.HasPrefix(dst, "refs/") {
					dst = "refs/heads/" + dst
				}
				specs = append(specs, src+":"+dst)
			}
			if _, err := g.Run(ctx, append([]string{"push", "--quiet", "--no-verify", "paddock::" + info.Name}, specs...)...); err != nil {
				return apperr.Conflict("fetch the sandbox's work first (`paddock sync`) and merge it", "%v", err)
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: pushed %s into %s\n", strings.Join(refs, ", "), info.Name)
			return nil
		},
	}
}
