package sandbox

import (
	"context"

	"github.com/paddockhq/paddock/internal/store"
)

// Viewer is the signed-in user a request acts for, on a daemon a team shares. A request
// with no Viewer in its context comes from the daemon's host (the unix socket, a token
// `paddock token create` made) and sees every sandbox; so does an admin. Anyone else
// sees only the sandboxes they made: to them, another's sandbox does not exist (not
// found, never "forbidden", so that its name does not leak).
type Viewer struct {
	UserID int64
	Login  string
	Admin  bool
}

type viewerKey struct{}

// WithViewer returns ctx acting for v.
func WithViewer(ctx context.Context, v Viewer) context.Context {
	return context.WithValue(ctx, viewerKey{}, v)
}

// ViewerOf returns who ctx acts for; ok is false for the daemon's host.
func ViewerOf(ctx context.Context) (v Viewer, ok bool) {
	v, ok = ctx.Value(viewerKey{}).(Viewer)
	return v, ok
}

// Sees says whether ctx's viewer may see sb.
func Sees(ctx context.Context, sb store.Sandbox) bool {
	v, ok := ViewerOf(ctx)
	return !ok || v.Admin || sb.OwnerID == v.UserID
}

// ownerID is the owner of a sandbox ctx makes: its viewer, or 0 (the host's).
func ownerID(ctx context.Context) int64 {
	v, _ := ViewerOf(ctx)
	return v.UserID
}

// ownerLogin is the GitHub login of a sandbox's owner; "" for the host's.
func (s *Service) ownerLogin(ctx context.Context, sb store.Sandbox) string {
	if sb.OwnerID == 0 {
		return ""
	}
	u, err := s.opts.Store.GetUser(ctx, sb.OwnerID)
	if err != nil {
		return "?"
	}
	return u.Login
}
