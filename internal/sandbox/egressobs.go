package sandbox

import "github.com/paddockhq/paddock/internal/proxy/egress"

// observeEgress is told of every request the egress proxy decided for any sandbox
// (egress.Options.OnRequest), on the request's goroutine: each reader of them takes it in
// turn and must not block.
func (s *Service) observeEgress(r egress.Request) {
	s.recordRequest(r)
	s.net.Learn(r)
	if f, ok := s.names.Check(r.Sandbox, r.Host, r.Time); ok {
		s.raiseSoon(r.Sandbox, "", f)
	}
}
