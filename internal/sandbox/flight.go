package sandbox

import (
	"strconv"

	"github.com/paddockhq/paddock/internal/flightrec"
	"github.com/paddockhq/paddock/internal/proxy/egress"
)

// Flight is the daemon's flight recorder (nil when it keeps none): the API records
// there what it does in a sandbox for a client (exec, copies out).
func (s *Service) Flight() *flightrec.Recorder { return s.opts.Flight }

// recordRequest puts a request the egress proxy decided in the sandbox's flight record.
func (s *Service) recordRequest(r egress.Request) {
	if s.opts.Flight == nil {
		return
	}
	f := map[string]string{"method": r.Method, "host": r.Host, "port": strconv.Itoa(r.Port), "allowed": strconv.FormatBool(r.Allowed)}
	if r.Path != "" {
		f["path"] = r.Path
	}
	if r.Reason != "" {
		f["reason"] = r.Reason
	}
	if r.Repeat {
		f["repeat"] = "true"
	}
	s.opts.Flight.Add(r.Sandbox, flightrec.Entry{Time: r.Time, Kind: flightrec.KindNet, Fields: f})
}
