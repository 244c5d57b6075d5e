package api

import (
	"context"
	"net/http"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/metering"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/store"
)

// EnableMetering serves usage and budgets from the credential proxy's meter.
func (s *Server) EnableMetering(m *metering.Meter) { s.meter = m }

func (s *Server) usageRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/usage", s.getUsage)
	mux.HandleFunc("GET /v1/budgets", s.listBudgets)
	mux.HandleFunc("PUT /v1/sandboxes/{name}/budget", s.setBudget)
}

var errNoMeter = apperr.Unavailable("restart the daemon (`paddock daemon restart`) with this version", "this daemon does not meter model calls")

// UsageReport is wire.UsageReport.
type UsageReport = wire.UsageReport

// getUsage serves GET /v1/usage?sandbox=NAME&session=NAME&since=24h.
func (s *Server) getUsage(w http.ResponseWriter, r *http.Request) {
	if s.meter == nil {
		s.writeError(w, r, errNoMeter)
		return
	}
	q := r.URL.Query()
	uq := store.UsageQuery{Sandbox: q.Get("sandbox"), Session: q.Get("session")}
	if uq.Session != "" && uq.Sandbox == "" {
		s.writeError(w, r, apperr.Invalid("name it as SANDBOX/SESSION", "a session's usage needs its sandbox"))
		return
	}
	if since := q.Get("since"); since != "" {
		p, err := events.ParsePoint(since, time.Now(), false)
		if err != nil {
			s.writeError(w, r, apperr.Invalid("give since as a duration (24h) or a time (RFC 3339)", "since: %v", err))
			return
		}
		uq.Since = p.Time
	}
	if uq.Sandbox != "" && !s.visible(r.Context(), uq.Sandbox) {
		s.writeError(w, r, apperr.NotFound("run `paddock ls` to see your sandboxes", "no sandbox %q", uq.Sandbox))
		return
	}
	if err := s.meter.Flush(r.Context()); err != nil {
		s.writeError(w, r, err)
		return
	}
	groups, err := s.svc.Store().UsageGroups(r.Context(), uq)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rep := UsageReport{Since: uq.Since, Groups: []store.UsageGroup{}, Estimate: true}
	for _, g := range groups {
		if uq.Sandbox == "" && !s.visible(r.Context(), g.Sandbox) {
			continue
		}
		rep.Groups = append(rep.Groups, g)
		rep.Total.Add(g.UsageSum)
	}
	writeJSON(w, http.StatusOK, rep)
}

// BudgetList is wire.BudgetList.
type BudgetList = wire.BudgetList

func (s *Server) listBudgets(w http.ResponseWriter, r *http.Request) {
	if s.meter == nil {
		s.writeError(w, r, errNoMeter)
		return
	}
	rows, err := s.svc.Store().ListSandboxes(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var seen []store.Sandbox
	for _, sb := range rows {
		if sandbox.Sees(r.Context(), sb) {
			seen = append(seen, sb)
		}
	}
	list := s.meter.Budgets(r.Context(), seen)
	if list == nil {
		list = []metering.Budget{}
	}
	writeJSON(w, http.StatusOK, BudgetList{Default: s.meter.Default(), Budgets: list, Estimate: true})
}

// BudgetRequest is wire.BudgetRequest.
type BudgetRequest = wire.BudgetRequest

func (s *Server) setBudget(w http.ResponseWriter, r *http.Request) {
	if s.meter == nil {
		s.writeError(w, r, errNoMeter)
		return
	}
	var req BudgetRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.USD < 0 || req.Tokens < 0 {
		s.writeError(w, r, apperr.Invalid("", "a budget cannot be negative"))
		return
	}
	sb, err := s.svc.Record(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Session != "" {
		if _, err := s.svc.Store().GetSession(r.Context(), sb.ID, req.Session); err != nil {
			s.writeError(w, r, apperr.NotFound("run `paddock chat "+sb.Name+" --list` to see its sessions", "sandbox %q has no session named %q", sb.Name, req.Session))
			return
		}
	}
	b, err := s.meter.SetBudget(r.Context(), sb, req.Session, req.Limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// sandboxUsage fills in each sandbox's usage, when the daemon meters.
func (s *Server) sandboxUsage(ctx context.Context, list []sandbox.Info) {
	if s.meter == nil || len(list) == 0 {
		return
	}
	if s.meter.Flush(ctx) != nil {
		return
	}
	st := s.svc.Store()
	sums, err := st.UsageBySandbox(ctx)
	if err != nil || len(sums) == 0 {
		return
	}
	rows, err := st.ListSandboxes(ctx)
	if err != nil {
		return
	}
	ids := map[string]string{}
	for _, sb := range rows {
		ids[sb.Name] = sb.ID
	}
	for i := range list {
		if sum, ok := sums[ids[list[i].Name]]; ok {
			list[i].Usage = &sum
		}
	}
}

// oneSandboxUsage fills in one sandbox's usage from its own calls only (a reader after
// every usage event, the TUI and web UI, asks this often).
func (s *Server) oneSandboxUsage(ctx context.Context, in *sandbox.Info) {
	if s.meter == nil {
		return
	}
	sb, err := s.svc.Record(ctx, in.Name)
	if err != nil || s.meter.Flush(ctx) != nil {
		return
	}
	groups, err := s.svc.Store().UsageGroups(ctx, store.UsageQuery{SandboxID: sb.ID})
	if err != nil || len(groups) == 0 {
		return
	}
	var sum store.UsageSum
	for _, g := range groups {
		sum.Add(g.UsageSum)
	}
	in.Usage = &sum
}

// sessionUsage fills in the usage of each session of sandbox name.
func (s *Server) sessionUsage(ctx context.Context, name string, list []session.Info) {
	if s.meter == nil || len(list) == 0 {
		return
	}
	sb, err := s.svc.Record(ctx, name)
	if err != nil || s.meter.Flush(ctx) != nil {
		return
	}
	groups, err := s.svc.Store().UsageGroups(ctx, store.UsageQuery{SandboxID: sb.ID})
	if err != nil {
		return
	}
	sums := map[string]*store.UsageSum{}
	for _, g := range groups {
		if sums[g.Session] == nil {
			sums[g.Session] = &store.UsageSum{}
		}
		sums[g.Session].Add(g.UsageSum)
	}
	for i := range list {
		list[i].Usage = sums[list[i].Name]
	}
}
