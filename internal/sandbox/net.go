package sandbox

import "github.com/paddockhq/paddock/internal/netpolicy"

// Net is the sandboxes' egress policy: the rules the egress proxy decides by, the
// denials it recorded and the learn mode it feeds. The service makes it with its egress
// proxy; the API serves it as it is.
func (s *Service) Net() *netpolicy.Rules { return s.net }
