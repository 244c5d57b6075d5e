package bwrap

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/paddockhq/paddock/internal/backend"
)

var _ backend.WorkspaceCloner = (*Bwrap)(nil)

// CloneWorkspace implements backend.WorkspaceCloner: cp -a of from's workspace into
// to's, run in a bubblewrap of its own as the sandbox user, which sees the host's
// programs read-only, from's workspace read-only at /src and to's at /dst, and nothing
// else. The source is a sandbox's, which may swap a directory for a link to anywhere
// while it is read: in that namespace a link leads to nothing the sandbox could not
// read itself, and nothing is written outside /dst.
func (b *Bwrap) CloneWorkspace(ctx context.Context, from, to backend.ID, leave []string) error {
	if b.bwrap == "" {
		return fmt.Errorf("bwrap is not installed")
	}
	src, dst := b.paths(from).workspace(), b.paths(to).workspace()
	for _, d := range []string{src, dst} {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			return fmt.Errorf("clone a workspace: %s is not a sandbox's workspace", d)
		}
	}
	args := []string{"--unshare-all", "--unshare-user", "--uid", "1000", "--gid", "1000", "--disable-userns",
		"--cap-drop", "ALL", "--new-session", "--die-with-parent", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
		"--proc", "/proc", "--dev", "/dev"}
	for _, d := range []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"} {
		hostDir := "/" + d
		fi, err := os.Lstat(hostDir)
		if err != nil {
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(hostDir)
			if err != nil {
				return err
			}
			args = append(args, "--symlink", target, hostDir)
			continue
		}
		args = append(args, "--ro-bind", hostDir, hostDir)
	}
	args = append(args, "--ro-bind", src, "/src", "--bind", dst, "/dst", "--chdir", "/src",
		"--", "find", ".", "-mindepth", "1", "-maxdepth", "1")
	for _, name := range leave {
		if name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("clone a workspace: bad name to leave %q", name)
		}
		args = append(args, "!", "-name", name)
	}
	args = append(args, "-exec", "cp", "-a", "-t", "/dst", "--", "{}", "+")
	cmd := b.command(ctx, args)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("copy the workspace of %s into %s: %w: %s", from, to, err, lastKB(out))
	}
	return nil
}

// lastKB is the end of a command's output, for an error.
func lastKB(out []byte) string {
	if len(out) > 1024 {
		out = out[len(out)-1024:]
	}
	return strings.TrimSpace(string(out))
}
