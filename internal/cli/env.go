package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/termtext"
)

func newCmdEnv(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "env", Short: "Dotenv files between the host repository and a sandbox"}
	var force bool
	push := &cobra.Command{
		Use:   "push SANDBOX",
		Short: "Copy .env, .env.local and .env.* from the host repository into /workspace",
		Long: `Copy the host repository's dotenv files (.env, .env.local, .env.*) into /workspace, where
tools that read them (direnv with dotenv, node, python-dotenv) find them. A file that is newer in the
sandbox is not overwritten without --force. They are secrets you chose to give the sandbox.`,
		Args: exactArgs(1, "a sandbox"),
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
			entries, err := os.ReadDir(g.Repo)
			if err != nil {
				return err
			}
			var files []string
			for _, e := range entries {
				if !isDotenv(e.Name()) {
					continue
				}
				m := filepath.Join(g.Repo, e.Name())
				fi, err := os.Lstat(m)
				switch {
				case err != nil:
				case fi.Mode().IsRegular():
					files = append(files, m)
				case fi.Mode()&os.ModeSymlink != 0:
					// A link may be one a sandbox placed with sync --files, pointing at a
					// host secret: never read through it.
					fmt.Fprintf(f.IO.ErrOut, "paddock: skipped %s: a symlink (copy the file itself if you mean it)\n", termtext.Escape(e.Name()))
				}
			}
			if len(files) == 0 {
				return apperr.NotFound("", "no .env files in %s", g.Repo)
			}
			// Check every file before copying any.
			for _, src := range files {
				fi, _ := os.Stat(src)
				dst := inside.Workspace + "/" + filepath.Base(src)
				st, err := c.Stat(ctx, info.Name, dst)
				if err != nil || force {
					continue
				}
				if newer, _ := c.ModTime(ctx, info.Name, dst); newer.After(fi.ModTime()) && st.Type == "file" {
					return apperr.Conflict("add --force to overwrite it", "%s is newer in the sandbox than on the host", termtext.Escape(dst))
				}
			}
			for _, src := range files {
				in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
				if err != nil {
					return err
				}
				err = c.WriteFile(ctx, info.Name, inside.Workspace+"/"+filepath.Base(src), 0o600, in)
				in.Close()
				if err != nil {
					return err
				}
				fmt.Fprintf(f.IO.ErrOut, "paddock: copied %s\n", termtext.Escape(filepath.Base(src)))
			}
			return nil
		},
	}
	push.Flags().BoolVar(&force, "force", false, "overwrite files that are newer in the sandbox")
	cmd.AddCommand(push)
	return cmd
}

// isDotenv reports whether a file name is one `env push` copies: .env, and .env.local
// and the other .env.* files. Not .envrc: direnv runs it, and it often exports secrets
// that were never meant for the sandbox.
func isDotenv(name string) bool { return name == ".env" || strings.HasPrefix(name, ".env.") }
