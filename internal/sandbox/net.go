package sandbox

import "github.com/paddockhq/paddock/internal/netpolicy"

// Net is the sandboxes' egress policy the service's egress proxy decides by
// (Options.Net): its rules, the denials it recorded and the learn mode it feeds.
func (s *Service) Net() *netpolicy.Rules { return s.net }
