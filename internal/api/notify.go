package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/notify"
	"github.com/paddockhq/paddock/internal/store"
)

// NotifyStatus is wire.NotifyStatus.
type NotifyStatus = wire.NotifyStatus

// PushSubscriptionRequest is wire.PushSubscriptionRequest.
type PushSubscriptionRequest = wire.PushSubscriptionRequest

// EnableNotify gives the server the daemon's notifier; without it the /v1/notify routes
// answer unavailable. Call it before Handler.
func (s *Server) EnableNotify(n *notify.Notifier) { s.notifier = n }

func (s *Server) notifyRoutes(mux *http.ServeMux) {
	// Notifications tell of every sandbox: on a team's daemon they are for admins.
	mux.HandleFunc("GET /v1/notify", s.adminOnly(s.withNotifier(s.notifyStatus)))
	mux.HandleFunc("POST /v1/notify/subscriptions", s.adminOnly(s.withNotifier(s.subscribe)))
	mux.HandleFunc("DELETE /v1/notify/targets/{id}", s.adminOnly(s.withNotifier(s.removeTarget)))
	mux.HandleFunc("POST /v1/notify/test", s.adminOnly(s.withNotifier(s.testNotify)))
}

func (s *Server) withNotifier(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.notifier == nil {
			s.writeError(w, r, apperr.Unavailable("", "this daemon sends no notifications"))
			return
		}
		h(w, r)
	}
}

func (s *Server) notifyStatus(w http.ResponseWriter, r *http.Request) {
	targets, err := s.notifier.Targets(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, NotifyStatus{PublicKey: s.notifier.PublicKey(), Targets: targets})
}

func (s *Server) subscribe(w http.ResponseWriter, r *http.Request) {
	var req PushSubscriptionRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	label := req.Label
	if len(label) > 100 {
		label = label[:100]
	}
	id, err := s.notifier.Subscribe(r.Context(), store.PushSubscription{Endpoint: req.Endpoint, P256DH: req.Keys.P256DH, Auth: req.Keys.Auth, Label: label})
	if err != nil {
		s.writeError(w, r, apperr.Invalid("", "%v", err))
		return
	}
	s.log.Info("push subscription added", "id", id, "label", label)
	writeJSON(w, http.StatusOK, map[string]int64{"id": id})
}

func (s *Server) removeTarget(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("id")
	if raw == "webhook" {
		s.writeError(w, r, apperr.Invalid("remove webhook from [notify] in the config file then restart the daemon: paddock daemon stop (the next command starts it)",
			"the webhook comes from the config file"))
		return
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		s.writeError(w, r, apperr.Invalid("run `paddock notify ls` to see the targets", "%q is not a target id", raw))
		return
	}
	if err := s.notifier.Unsubscribe(r.Context(), id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = apperr.NotFound("run `paddock notify ls` to see the targets", "no push subscription %d", id)
		}
		s.writeError(w, r, err)
		return
	}
	s.log.Info("push subscription removed", "id", id)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) testNotify(w http.ResponseWriter, r *http.Request) {
	results, err := s.notifier.TestAll(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, results)
}
