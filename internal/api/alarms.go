package api

import (
	"net/http"

	"github.com/paddockhq/paddock/internal/alarm"
	"github.com/paddockhq/paddock/internal/api/wire"
)

func (s *Server) alarmRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/alarms", s.listAlarms)
	mux.HandleFunc("GET /v1/sandboxes/{name}/alarms", s.listAlarms)
	mux.HandleFunc("POST /v1/sandboxes/{name}/alarms/clear", s.clearAlarms)
}

// ClearAlarmsRequest is wire.ClearAlarmsRequest.
type ClearAlarmsRequest = wire.ClearAlarmsRequest

// ClearAlarmsResponse is wire.ClearAlarmsResponse.
type ClearAlarmsResponse = wire.ClearAlarmsResponse

// listAlarms lists the standing alarms of a sandbox, or of every sandbox; ?all=1 adds
// the cleared ones.
func (s *Server) listAlarms(w http.ResponseWriter, r *http.Request) {
	list, err := s.svc.Alarms(r.Context(), r.PathValue("name"), r.URL.Query().Get("all") != "")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if list == nil {
		list = []alarm.Alarm{}
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) clearAlarms(w http.ResponseWriter, r *http.Request) {
	var req ClearAlarmsRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	n, err := s.svc.ClearAlarms(r.Context(), r.PathValue("name"), req.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ClearAlarmsResponse{Cleared: n})
}
