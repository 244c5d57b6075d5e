package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/archive"
	"github.com/paddockhq/paddock/internal/hostdisk"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/termtext"
)

type cpOptions struct {
	src, dst string
}

func newCmdCp(f *Factory) *cobra.Command {
	opts := &cpOptions{}
	return &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy files and directories between the host and a sandbox",
		Long: `Copy files and directories between the host and a sandbox. One side is NAME:PATH;
a relative sandbox PATH is taken under /workspace.

  paddock cp ./notes.txt myrepo:/workspace/     into the sandbox
  paddock cp myrepo:out.bin .                    out of it
  paddock cp -- ./dist myrepo:build/             directories copy recursively

Symlinks are copied as links, never followed.`,
		Args: exactArgs(2, "a source and a destination"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.src, opts.dst = args[0], args[1]
			return runCp(cmd.Context(), f, opts)
		},
	}
}

// sandboxRef splits NAME:PATH. A host path with a slash before any colon is not a ref.
func sandboxRef(arg string) (name, p string, ok bool) {
	i := strings.IndexByte(arg, ':')
	if i <= 0 || strings.ContainsRune(arg[:i], '/') {
		return "", "", false
	}
	name, p = arg[:i], arg[i+1:]
	trailing := strings.HasSuffix(p, "/")
	if !path.IsAbs(p) {
		p = path.Join(inside.Workspace, p)
	}
	p = path.Clean(p)
	if trailing && p != "/" {
		p += "/"
	}
	return name, p, true
}

func runCp(ctx context.Context, f *Factory, opts *cpOptions) error {
	srcName, srcPath, srcIn := sandboxRef(opts.src)
	dstName, dstPath, dstIn := sandboxRef(opts.dst)
	if srcIn == dstIn {
		return usagef("cp copies between the host and a sandbox: exactly one of SRC and DST must be NAME:PATH")
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	if dstIn {
		return copyIn(ctx, f, c, opts.src, dstName, dstPath)
	}
	return copyOut(ctx, f, c, srcName, srcPath, opts.dst)
}

func copyIn(ctx context.Context, f *Factory, c *client.Client, src, name, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return apperr.NotFound("", "%s: no such file or directory", src)
	}
	dstIsDir := strings.HasSuffix(dst, "/")
	if st, err := c.Stat(ctx, name, strings.TrimSuffix(dst, "/")); err == nil && st.Type == "dir" {
		dstIsDir = true
	} else if err != nil && apperr.KindOf(err) != apperr.KindNotFound {
		return err
	}
	dst = strings.TrimSuffix(dst, "/")
	if dst == "" {
		dst = "/"
	}
	if fi.Mode().IsRegular() {
		target := dst
		if dstIsDir {
			target = path.Join(dst, filepath.Base(src))
		}
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		if err := c.WriteFile(ctx, name, target, uint32(fi.Mode().Perm()), in); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: copied %s (%d bytes) to %s:%s\n", src, fi.Size(), name, target)
		return nil
	}
	// A directory or symlink goes as a tar stream. Into an existing directory it keeps
	// its own name (cp -r semantics); otherwise it becomes dst.
	prefix := ""
	if dstIsDir {
		prefix = filepath.Base(src)
	}
	if fi.Mode()&os.ModeSymlink != 0 && !dstIsDir {
		return usagef("%s is a symlink: copy it into an existing sandbox directory (DST ending in /)", src)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(archive.Pack(pw, src, prefix)) }()
	if err := c.TarIn(ctx, name, dst, pr); err != nil {
		pr.CloseWithError(err)
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: copied %s to %s:%s\n", src, name, path.Join(dst, prefix))
	return nil
}

func copyOut(ctx context.Context, f *Factory, c *client.Client, name, src, dst string) error {
	src = strings.TrimSuffix(src, "/")
	if src == "" {
		src = "/"
	}
	st, err := c.Stat(ctx, name, src)
	if err != nil {
		return err
	}
	// The destination is the user's, but a link at its last component may be one a
	// sandbox placed on an earlier copy: never write through it.
	if last := strings.TrimSuffix(dst, string(filepath.Separator)); last != "" {
		if fi, err := os.Lstat(last); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(last)
			return apperr.Conflict("", "%s is a symlink to %s: give the directory itself (paddock never copies through a link)", last, target)
		}
	}
	hostDir := strings.HasSuffix(dst, string(filepath.Separator)) || dst == "."
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		hostDir = true
	}
	if st.Type == "file" {
		target := dst
		if hostDir {
			target = filepath.Join(dst, path.Base(src))
		}
		room := hostdisk.Room(filepath.Dir(target))
		if room > 0 && st.Size > room {
			return fmt.Errorf("copy %s:%s to %s: %w", name, src, target, &archive.NoRoomError{Name: path.Base(src), Size: st.Size, Room: room})
		}
		n, err := readToFile(ctx, c, name, src, target, os.FileMode(st.Mode).Perm(), room)
		if err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: copied %s:%s (%d bytes) to %s\n", name, src, n, target)
		return nil
	}
	// Directories and symlinks come as a tar whose entries start with src's base name,
	// and only those are taken: into a host directory they go beneath that name.
	opts := archive.Options{StripComponents: 1, Top: path.Base(path.Join("/", src))}
	if opts.Top == "/" {
		opts.Top = "" // the whole sandbox: its entries are the root's
	}
	target := dst
	if hostDir {
		opts.StripComponents = 0
	} else if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	opts.MaxBytes = hostdisk.Room(target)
	body, err := c.TarOut(ctx, name, src)
	if err != nil {
		return err
	}
	defer body.Close()
	stats, err := archive.Unpack(body, target, opts)
	if err != nil {
		return fmt.Errorf("copy %s:%s to %s: %w", name, src, dst, err)
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: copied %s:%s (%d files, %d bytes) to %s\n", name, src, stats.Files, stats.Bytes, dst)
	for _, l := range stats.Links {
		if archive.Escapes(l.Name, l.Target) {
			fmt.Fprintf(f.IO.ErrOut, "paddock: warning: %s is a symlink to %s, outside the destination; kept as a link (paddock never writes through it)\n",
				termtext.Escape(filepath.Join(target, filepath.FromSlash(l.Name))), termtext.Escape(l.Target))
		}
	}
	return nil
}

// readToFile writes a sandbox file to a host file atomically: a temporary file beside it,
// renamed into place once complete, and never more than room bytes of it (0: no bound),
// however much the file grew since it was looked at.
func readToFile(ctx context.Context, c *client.Client, name, src, target string, mode os.FileMode, room int64) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".paddock-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	var w io.Writer = tmp
	if room > 0 {
		w = &boundedWriter{w: tmp, left: room, name: path.Base(src)}
	}
	n, err := c.ReadFile(ctx, name, src, w)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, err
	}
	return n, os.Rename(tmp.Name(), target)
}

// boundedWriter fails a write that would take it past left bytes.
type boundedWriter struct {
	w    io.Writer
	left int64
	name string
	n    int64
}

func (b *boundedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > b.left {
		return 0, &archive.NoRoomError{Name: b.name, Size: b.n + int64(len(p)), Room: b.n + b.left}
	}
	n, err := b.w.Write(p)
	b.left -= int64(n)
	b.n += int64(n)
	return n, err
}
