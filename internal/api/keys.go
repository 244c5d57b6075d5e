package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/sandbox"
)

var errEmptyKey = apperr.Invalid("to remove the key paddock keeps, run `paddock key rm PROVIDER`", "no key given")

// KeyRequest is wire.KeyRequest.
type KeyRequest = wire.KeyRequest

func (s *Server) listProviders(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.keys.Providers())
}

func (s *Server) setKey(w http.ResponseWriter, r *http.Request) {
	var req KeyRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Key == "" {
		s.writeError(w, r, errEmptyKey)
		return
	}
	info, err := s.keys.SetKey(r.PathValue("name"), req.Key)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) removeKey(w http.ResponseWriter, r *http.Request) {
	info, err := s.keys.SetKey(r.PathValue("name"), "")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// Providers lists the credential proxy's model providers and where their keys come from.
func (c *Client) Providers(ctx context.Context) ([]sandbox.ProviderInfo, error) {
	var out []sandbox.ProviderInfo
	err := c.Do(ctx, http.MethodGet, "/v1/providers", nil, &out)
	return out, err
}

// SetKey gives the daemon provider's key ("" removes the one `SetKey` kept).
func (c *Client) SetKey(ctx context.Context, provider, key string) (sandbox.ProviderInfo, error) {
	var out sandbox.ProviderInfo
	path := "/v1/providers/" + url.PathEscape(provider) + "/key"
	if key == "" {
		err := c.Do(ctx, http.MethodDelete, path, nil, &out)
		return out, err
	}
	body, _ := json.Marshal(KeyRequest{Key: key})
	err := c.Do(ctx, http.MethodPut, path, bytes.NewReader(body), &out)
	return out, err
}
