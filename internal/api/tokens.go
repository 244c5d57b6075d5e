package api

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/store"
)

// TokenPrefix starts every API token, so that secret scanners and people can tell one.
const TokenPrefix = "pdk_"

// TokenInfo is wire.TokenInfo.
type TokenInfo = wire.TokenInfo

// TokenRequest is wire.TokenRequest.
type TokenRequest = wire.TokenRequest

// NewToken is wire.NewToken.
type NewToken = wire.NewToken

var tokenName = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// newSecret returns 256 random bits, base64url, and their SHA-256: the secret goes to
// the user once, the hash to the store.
func newSecret() (string, []byte) {
	b := make([]byte, 32)
	rand.Read(b)
	s := base64.RawURLEncoding.EncodeToString(b)
	return s, hashSecret(s)
}

func hashSecret(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func tokenInfo(t store.Token) TokenInfo {
	in := TokenInfo{Name: t.Name, ReadOnly: t.ReadOnly, Created: t.Created}
	if !t.LastUsed.IsZero() {
		used := t.LastUsed
		in.LastUsed = &used
	}
	return in
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	rows, err := s.svc.Store().Tokens(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := []TokenInfo{}
	for _, t := range rows {
		out = append(out, tokenInfo(t))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var req TokenRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if !tokenName().MatchString(req.Name) {
		s.writeError(w, r, apperr.Invalid("", "a token name is 1 to 64 letters, digits, dots, dashes and underscores, starting with a letter or digit; got %q", req.Name))
		return
	}
	secret, _ := newSecret()
	secret = TokenPrefix + secret
	t := store.Token{Name: req.Name, Hash: hashSecret(secret), ReadOnly: req.ReadOnly, Created: time.Now()}
	if err := s.svc.Store().CreateToken(r.Context(), t); err != nil {
		if errors.Is(err, store.ErrNameTaken) {
			err = apperr.Conflict("revoke it first (`paddock token revoke "+req.Name+"`) or choose another name", "a token named %q exists", req.Name)
		}
		s.writeError(w, r, err)
		return
	}
	s.log.Info("token created", "name", req.Name, "read_only", req.ReadOnly)
	writeJSON(w, http.StatusOK, NewToken{TokenInfo: tokenInfo(t), Token: secret})
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := s.svc.Store().DeleteToken(r.Context(), name); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = apperr.NotFound("run `paddock token ls` to see your tokens", "no token named %q", name)
		}
		s.writeError(w, r, err)
		return
	}
	s.log.Info("token revoked", "name", name)
	w.WriteHeader(http.StatusNoContent)
}
