package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/proxy/creds"
)

// LoginRequest is wire.LoginRequest.
type LoginRequest = wire.LoginRequest

func (s *Server) listLogins(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.keys.Logins())
}

func (s *Server) setLogin(w http.ResponseWriter, r *http.Request) {
	var req LoginRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.keys.SetLogin(r.PathValue("name"), req.Token, req.File)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) removeLogin(w http.ResponseWriter, r *http.Request) {
	st, err := s.keys.RemoveLogin(r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// Logins says what the daemon knows of each subscription login (never a token).
func (c *Client) Logins(ctx context.Context) ([]creds.LoginStatus, error) {
	var out []creds.LoginStatus
	err := c.Do(ctx, http.MethodGet, "/v1/logins", nil, &out)
	return out, err
}

// SetLogin gives the daemon a subscription login.
func (c *Client) SetLogin(ctx context.Context, name string, req LoginRequest) (creds.LoginStatus, error) {
	var out creds.LoginStatus
	body, _ := json.Marshal(req)
	err := c.Do(ctx, http.MethodPut, "/v1/logins/"+url.PathEscape(name), bytes.NewReader(body), &out)
	return out, err
}

// RemoveLogin makes the daemon forget a subscription login.
func (c *Client) RemoveLogin(ctx context.Context, name string) (creds.LoginStatus, error) {
	var out creds.LoginStatus
	err := c.Do(ctx, http.MethodDelete, "/v1/logins/"+url.PathEscape(name), nil, &out)
	return out, err
}
