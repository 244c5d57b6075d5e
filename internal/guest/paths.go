package guest

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/paddockhq/paddock/internal/inside"
)

// defaultRoot is the root of Files calls that name none.
const defaultRoot = inside.Workspace

// The error detail (an errdetails.ErrorInfo) that marks an InvalidArgument status for a
// path that would leave its root; guestclient recognises it.
const (
	errorDomain       = "agent.paddock.dev"
	reasonPathEscapes = "PATH_ESCAPES"
)

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
		return nil, status.Errorf(codes.InvalidArgument, "root %q is not an absolute path", root)
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

// statusError maps err from op on the file at full to a gRPC status whose message reads
// like an os.PathError ("open /workspace/x: file does not exist") and whose code says
// what kind of failure it was.
func statusError(op, full string, err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	code, reason := codes.Unknown, err
	switch {
	case isEscape(err):
		code, reason = codes.InvalidArgument, errPathEscapes
	case errors.Is(err, fs.ErrNotExist):
		code, reason = codes.NotFound, fs.ErrNotExist
	case errors.Is(err, fs.ErrPermission):
		code, reason = codes.PermissionDenied, fs.ErrPermission
	case errors.Is(err, fs.ErrExist):
		code, reason = codes.AlreadyExists, fs.ErrExist
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.ELOOP):
		code, reason = codes.FailedPrecondition, innermost(err)
	case errors.Is(err, syscall.EINVAL):
		code, reason = codes.InvalidArgument, innermost(err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		code, reason = codes.ResourceExhausted, innermost(err)
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			reason = pe.Err
		}
	}
	if reason == errPathEscapes {
		return escapeErrorf("%s %s: %v", op, full, reason)
	}
	return status.Errorf(code, "%s %s: %v", op, full, reason)
}

// escapeErrorf returns an InvalidArgument status marked (for guestclient) as a path that
// would leave its root.
func escapeErrorf(format string, args ...any) error {
	st := status.Newf(codes.InvalidArgument, format, args...)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reasonPathEscapes, Domain: errorDomain}); err == nil {
		st = d
	}
	return st.Err()
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
