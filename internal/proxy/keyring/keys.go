// Package keyring is what the credential proxy holds for the user: its providers' API
// keys, the subscription logins that can stand for them, and the CA its certificate is
// signed with. The daemon constructs one Service over its proxy; the API lists and sets
// keys and logins through it, and sessions read from it what their agents are given
// (placeholders only: the real key never enters a sandbox).
package keyring

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/atomicfile"
	"github.com/paddockhq/paddock/internal/proxy/creds"
)

// ProviderInfo is a model provider of the credential proxy, as GET /v1/providers shows
// it: never the key itself.
type ProviderInfo = wire.ProviderInfo

// Service manages the credential proxy's keys and logins. A Service over no proxy
// (nil) has none, and refuses to keep any.
type Service struct {
	creds *creds.Proxy
}

// New returns the Service of the credential proxy p (nil: the daemon has none).
func New(p *creds.Proxy) *Service { return &Service{creds: p} }

// Providers lists the credential proxy's model providers and where their keys come from.
func (s *Service) Providers() []ProviderInfo {
	if s.creds == nil {
		return nil
	}
	var out []ProviderInfo
	for _, name := range s.creds.Names() {
		p, _ := s.creds.Provider(name)
		if strings.HasPrefix(p.Route, "/mcp/") {
			continue
		}
		key := p.KeySource()
		if s.hasLogin(p.Login) {
			key = "login"
		}
		out = append(out, ProviderInfo{Name: name, Key: key, Login: p.Login, KeyEnv: p.KeyEnv()})
	}
	return out
}

// NeedKey checks that provider has a key, for an agent about to start that calls it; a
// subscription login the agent can use (login, held by the daemon) does instead.
func (s *Service) NeedKey(ctx context.Context, provider, login, agent string) error {
	if s.creds == nil || provider == "" || s.hasLogin(login) {
		return nil
	}
	p, ok := s.creds.Provider(provider)
	if !ok {
		return nil
	}
	if _, err := p.Key(ctx); errors.Is(err, creds.ErrNoKey) {
		return apperr.Unavailable(fmt.Sprintf("run `paddock key set %s` (it asks for the key), or start the daemon with %s in its environment",
			provider, keyEnvHint(provider)), "agent %s calls %s, and the daemon has no key for it: %v", agent, provider, err)
	} else if err != nil {
		return err
	}
	return nil
}

func keyEnvHint(provider string) string {
	return strings.ToUpper(strings.ReplaceAll(provider, "-", "_")) + "_API_KEY"
}

// SetKey keeps key as provider's key, in the daemon's key file for it (mode 0600, beside
// the config, where no sandbox sees it). An empty key removes the file.
func (s *Service) SetKey(provider, key string) (ProviderInfo, error) {
	p, err := s.keyProvider(provider)
	if err != nil {
		return ProviderInfo{}, err
	}
	key = strings.TrimSpace(key)
	if strings.ContainsAny(key, " \t\r\n") {
		return ProviderInfo{}, apperr.Invalid("paste the key alone, on one line", "a key has no spaces or line breaks")
	}
	file := p.KeyFile()
	if key == "" {
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return ProviderInfo{}, err
		}
		return ProviderInfo{Name: provider, Key: p.KeySource()}, nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return ProviderInfo{}, err
	}
	if err := atomicfile.Write(file, []byte(key+"\n"), 0o600); err != nil {
		return ProviderInfo{}, err
	}
	return ProviderInfo{Name: provider, Key: p.KeySource()}, nil
}

func (s *Service) keyProvider(name string) (*creds.Provider, error) {
	if s.creds == nil {
		return nil, apperr.Unavailable("", "this daemon has no credential proxy")
	}
	p, ok := s.creds.Provider(name)
	if !ok || strings.HasPrefix(p.Route, "/mcp/") {
		return nil, apperr.NotFound("see them with `paddock key ls`", "no provider %q", name)
	}
	if name == creds.ChatGPT {
		return nil, apperr.Invalid(fmt.Sprintf("run `paddock login %s`", p.Login), "provider %s takes no API key, only the %s login", name, p.Login)
	}
	if p.KeyFile() == "" {
		return nil, apperr.Unavailable("", "this daemon keeps no key files")
	}
	return p, nil
}
