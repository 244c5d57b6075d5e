package guest

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/inside"
)

// defaultRoot is the root of Files calls that name none.
const defaultRoot = inside.Workspace

// errPathEscapes is returned for a path that lies outside its root.
var errPathEscapes = errors.New("path escapes root")

// rootPath is a Files path resolved against its root: the directory to act through and
// the slash-separated path beneath it ("." for the root itself).
type rootPath struct {
	root *beneath
	dir  string // the root's directory, for messages
	rel  string
}

// openPath opens root (defaultRoot when empty) and resolves p beneath it. The caller
// closes the result. Resolution through the returned root never leaves it, not through
// ".." and not through symlinks.
func openPath(root, p string) (*rootPath, error) {
	if root == "" {
		root = defaultRoot
	}
	if !filepath.IsAbs(root) {
		return nil, guestproto.Errorf(guestproto.InvalidArgument, "root %q is not an absolute path", root)
	}
	root = filepath.Clean(root)
	rel, err := relPath(root, p)
	if err != nil {
		return nil, err
	}
	r, err := openBeneath(root)
	if err != nil {
		return nil, statusError("open root", root, err)
	}
	return &rootPath{root: r, dir: root, rel: rel}, nil
}

// relPath returns p as a clean slash path relative to root, or an InvalidArgument error
// when it lies outside.
func relPath(root, p string) (string, error) {
	var rel string
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(root, filepath.Clean(p))
		if err != nil {
			return "", escapeError(p)
		}
		rel = r
	} else {
		rel = filepath.Clean(p)
	}
	rel = filepath.ToSlash(rel)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", escapeError(p)
	}
	return rel, nil
}

// close releases the root.
func (rp *rootPath) close() { rp.root.Close() }

// full returns the absolute path of name (relative to the root), for messages.
func (rp *rootPath) full(name string) string {
	return filepath.Join(rp.dir, filepath.FromSlash(name))
}

// error maps err from an operation on name to a gRPC status naming the full path.
func (rp *rootPath) error(op, name string, err error) error {
	return statusError(op, rp.full(name), err)
}

// escapeError is the InvalidArgument status for a path outside its root.
func escapeError(p string) error {
	return statusError("resolve", p, errPathEscapes)
}

// statusError maps err from op on the file at full to a *guestproto.Error whose message
// reads like an os.PathError ("open /workspace/x: file does not exist") and whose code
// says what kind of failure it was.
func statusError(op, full string, err error) error {
	if isStatus(err) {
		return err
	}
	code, reason := guestproto.Unknown, err
	switch {
	case isEscape(err):
		code, reason = guestproto.PathEscapes, errPathEscapes
	case errors.Is(err, fs.ErrNotExist):
		code, reason = guestproto.NotFound, fs.ErrNotExist
	case errors.Is(err, fs.ErrPermission):
		code, reason = guestproto.PermissionDenied, fs.ErrPermission
	case errors.Is(err, fs.ErrExist):
		code, reason = guestproto.AlreadyExists, fs.ErrExist
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.ELOOP):
		code, reason = guestproto.FailedPrecondition, innermost(err)
	case errors.Is(err, syscall.EINVAL):
		code, reason = guestproto.InvalidArgument, innermost(err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		code, reason = guestproto.ResourceExhausted, innermost(err)
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			reason = pe.Err
		}
	}
	return guestproto.Errorf(code, "%s %s: %v", op, full, reason)
}

// isStatus reports whether err already is the guest's answer (a *guestproto.Error).
func isStatus(err error) bool {
	var e *guestproto.Error
	return errors.As(err, &e)
}

// isEscape reports whether err is os.Root's refusal to leave the root. os does not
// export that error, so it is recognised by its text.
func isEscape(err error) bool {
	if errors.Is(err, errPathEscapes) {
		return true
	}
	return innermost(err).Error() == "path escapes from parent"
}

// innermost unwraps err down to its cause.
func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// splitParents returns the proper ancestors of a clean slash path, outermost first:
// "a/b/c" gives "a", "a/b".
func splitParents(name string) []string {
	var out []string
	for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
		out = append(out, d)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
