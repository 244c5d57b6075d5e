package api

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/ghauth"
	"github.com/paddockhq/paddock/internal/store"
)

// Lifetimes and bounds of a GitHub sign-in.
const (
	// OAuthStateTTL is how long a browser has between leaving for GitHub and coming back.
	OAuthStateTTL = 10 * time.Minute
	// MembershipGrace is how long a user keeps access while GitHub cannot be asked
	// about their membership (it is down, or unreachable); after it, they are refused
	// until it answers.
	MembershipGrace = time.Hour
	// maxPending bounds the sign-ins under way (browser states and device flows), so
	// that starting them cannot fill the daemon's memory.
	maxPending = 10000
)

// TeamOptions configure sign-in with GitHub for a team sharing the daemon.
type TeamOptions struct {
	GitHub *ghauth.Client
	// IsAdmin says whether a GitHub login is an admin: admins see and act on every
	// sandbox and read the audit log.
	IsAdmin func(login string) bool
	// Recheck is how long GitHub's word that a user is a member is trusted before it is
	// asked again, at their next request.
	Recheck time.Duration
}

// team is sign-in with GitHub: the browser's authorization code flow, the terminal's
// device flow, and the membership checks on the users' requests.
type team struct {
	opts TeamOptions

	mu sync.Mutex
	// states are the browser sign-ins under way, by the SHA-256 of their state.
	states map[string]oauthState
	// devices are the device flows under way, by the SHA-256 of their handle.
	devices map[string]*deviceLogin
}

type oauthState struct {
	verifier string
	// binding is the SHA-256 of the cookie the browser got with the state: only that
	// browser may come back with it.
	binding  []byte
	redirect string
	expires  time.Time
}

type deviceLogin struct {
	deviceCode string
	expires    time.Time
	interval   time.Duration
	lastPoll   time.Time
}

// EnableTeam lets the members of a GitHub organization sign in over TCP: in a browser
// (/auth/github) and with `paddock login` (the device flow through /v1/auth/device).
// Each user sees only the sandboxes they made; admins see all. Call it after EnableWeb.
func (s *Server) EnableTeam(opts TeamOptions) {
	if opts.Recheck <= 0 {
		opts.Recheck = 5 * time.Minute
	}
	s.web.auth.team = &team{opts: opts, states: map[string]oauthState{}, devices: map[string]*deviceLogin{}}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// putState remembers a browser sign-in under way.
func (t *team) putState(state string, st oauthState, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range t.states {
		if !now.Before(v.expires) {
			delete(t.states, k)
		}
	}
	if len(t.states) >= maxPending {
		return false
	}
	t.states[string(hashSecret(state))] = st
	return true
}

// takeState returns and forgets a browser sign-in under way: a state works once, for
// the browser it was given to, within OAuthStateTTL.
func (t *team) takeState(state string, binding string, now time.Time) (oauthState, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := string(hashSecret(state))
	st, ok := t.states[k]
	delete(t.states, k)
	if !ok || !now.Before(st.expires) || binding == "" || subtle.ConstantTimeCompare(st.binding, hashSecret(binding)) != 1 {
		return oauthState{}, false
	}
	return st, true
}

// member asks GitHub who a token is and whether they are an active member; it records
// the sign-in of a member and returns their row.
func (a *remoteAuth) signIn(ctx context.Context, token string) (store.User, error) {
	t := a.team
	gu, err := t.opts.GitHub.User(ctx, token)
	if err != nil {
		return store.User{}, apperr.Unavailable("try again; if it goes on, the daemon's log says more", "ask GitHub who signed in: %v", err)
	}
	ok, err := t.opts.GitHub.Member(ctx, token)
	if err != nil {
		return store.User{}, apperr.Unavailable("try again; if it goes on, the daemon's log says more", "ask GitHub about %s's membership of %s: %v", gu.Login, t.opts.GitHub.Org(), err)
	}
	if !ok {
		a.audit(ctx, store.AuditEntry{Who: gu.Login, Action: "sign-in refused", Detail: "not an active member of " + t.opts.GitHub.Org()})
		return store.User{}, apperr.Forbidden("ask an owner of the organization "+t.opts.GitHub.Org()+" to add you (and accept the invitation), then sign in again",
			"GitHub user %s is not an active member of the organization %s, whose members alone may sign in here", gu.Login, t.opts.GitHub.Org())
	}
	return a.store.SignIn(ctx, store.User{GitHubID: gu.ID, Login: gu.Login, Name: gu.Name, Admin: t.opts.IsAdmin(gu.Login), GitHubToken: token}, a.now())
}

// errMembershipEnded is the answer to the request that finds a user's membership over.
func errMembershipEnded(login, org string) error {
	return apperr.Unauthorized("sign in again once you are a member of "+org,
		"%s is no longer an active member of the GitHub organization %s (or revoked this server's access): their tokens and browser sessions are ended", login, org)
}

// userCaller returns the caller a user's credential stands for, checking with GitHub
// that they are still a member when the last check is older than Recheck. A user whose
// membership ended is revoked: the error says so, and their credentials are deleted.
func (a *remoteAuth) userCaller(ctx context.Context, c *caller, userID int64) (*caller, error) {
	t := a.team
	if t == nil {
		return nil, apperr.Unauthorized("", "sign-in with GitHub is not configured on this daemon any more")
	}
	u, err := a.store.GetUser(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !u.Revoked.IsZero() {
		return nil, errMembershipEnded(u.Login, t.opts.GitHub.Org())
	}
	now := a.now()
	if now.Sub(u.Checked) >= t.opts.Recheck {
		member, err := t.opts.GitHub.Member(ctx, u.GitHubToken)
		switch {
		case errors.Is(err, ghauth.ErrTokenRevoked) || (err == nil && !member):
			if err := a.store.RevokeUser(ctx, u.ID, now); err != nil {
				return nil, err
			}
			detail := "GitHub says they are no longer an active member of " + t.opts.GitHub.Org()
			if err != nil {
				detail = "GitHub no longer accepts their token"
			}
			a.log.Warn("web: a user's membership ended; their tokens and sessions are revoked", "user", u.Login)
			a.audit(ctx, store.AuditEntry{Who: u.Login, UserID: u.ID, Action: "membership revoked", Detail: detail})
			return nil, errMembershipEnded(u.Login, t.opts.GitHub.Org())
		case err != nil:
			a.log.Warn("web: cannot check a user's membership with GitHub", "user", u.Login, "err", err)
			if now.Sub(u.Checked) >= MembershipGrace {
				return nil, apperr.Unavailable("try again later", "GitHub cannot be asked whether %s is still a member of %s: %v", u.Login, t.opts.GitHub.Org(), err)
			}
		default:
			if err := a.store.UserChecked(ctx, u.ID, t.opts.IsAdmin(u.Login), now); err != nil {
				return nil, err
			}
		}
	}
	if now.Sub(u.LastSeen) > time.Minute {
		a.store.UserSeen(ctx, u.ID, now)
	}
	c.userID, c.login, c.admin = u.ID, u.Login, t.opts.IsAdmin(u.Login)
	return c, nil
}

// audit records an event of sign-in; a failure to record is logged.
func (a *remoteAuth) audit(ctx context.Context, e store.AuditEntry) {
	if e.Time.IsZero() {
		e.Time = a.now()
	}
	if err := a.store.AddAudit(context.WithoutCancel(ctx), e); err != nil {
		a.log.Error("web: record in the audit log", "action", e.Action, "err", err)
	}
}
