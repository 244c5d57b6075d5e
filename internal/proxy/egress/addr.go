package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// nonPublicPrefixes are ranges that netip's predicates do not cover but that reach the host, its
// provider's network or nothing useful.
var nonPublicPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network": Linux connects 0.x.x.x to the host itself
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT, also used by cloud VPCs and tailnets
	netip.MustParsePrefix("240.0.0.0/4"),   // reserved, and the broadcast address
	netip.MustParsePrefix("fec0::/10"),     // deprecated site-local, still routed by some networks
}

// nat64 is the well-known NAT64 prefix: its addresses reach the IPv4 address in their last 32 bits.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// nonPublic reports whether a is an address a sandbox must not reach without an explicit rule:
// loopback, private (RFC 1918, fc00::/7), link-local (including the 169.254.169.254 cloud metadata
// service), unspecified, multicast, carrier-grade NAT and the like.
func nonPublic(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsUnspecified() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() {
		return true
	}
	for _, p := range nonPublicPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	if nat64.Contains(a) {
		b := a.As16()
		return nonPublic(netip.AddrFrom4([4]byte(b[12:])))
	}
	return false
}

// dialAddrs connects to port on each of addrs in turn and returns the first connection made. It never
// resolves host again, so what was checked is what is reached. host only names the destination in
// the error.
func (p *Proxy) dialAddrs(ctx context.Context, host string, addrs []netip.Addr, port int) (net.Conn, error) {
	var errs []error
	for _, a := range addrs {
		conn, err := p.dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("dial %s: no address", joinHostPort(host, port))
	}
	return nil, fmt.Errorf("dial %s: %w", joinHostPort(host, port), errors.Join(errs...))
}

// defaultLookupIP resolves host with the system resolver.
func defaultLookupIP(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}
