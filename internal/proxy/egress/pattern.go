package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// pattern is a parsed allowlist pattern.
type pattern struct {
	host     string // lowercase, no trailing dot, no "*."; IPs in canonical, unmapped form
	wildcard bool   // "*.host": any subdomain of host, not host itself
	ip       bool   // host is an IP literal
	port     int    // 0 means ports 80 and 443
}

// ParsePattern validates and normalises a user-given allowlist pattern: "host", "*.domain", "host:port"
// or an IP literal ("127.0.0.1", "127.0.0.1:8080", "[::1]:9000"). It lowercases the host and strips a
// trailing dot, so that what is stored compares equal to what a sandbox asks for; it rejects what would
// never match (a URL, a path, a wildcard other than a leading "*.", a port outside 1-65535) with an
// error saying why, rather than storing a rule that silently does nothing.
func ParsePattern(s string) (string, error) {
	p, err := parsePattern(s)
	if err != nil {
		return "", err
	}
	return p.String(), nil
}

// String returns the canonical form of p, which parsePattern accepts again unchanged.
func (p pattern) String() string {
	host := p.host
	if p.wildcard {
		host = "*." + host
	}
	if p.port == 0 {
		return host
	}
	return joinHostPort(host, p.port)
}

// matches reports whether p covers host:port; host must be canonical (see canonicalHost).
func (p pattern) matches(host string, isIP bool, port int) bool {
	if p.port == 0 {
		if port != 80 && port != 443 {
			return false
		}
	} else if port != p.port {
		return false
	}
	if p.wildcard {
		return !isIP && strings.HasSuffix(host, "."+p.host)
	}
	return host == p.host
}

// specificity orders the patterns that match one host: an exact host beats any wildcard, and a
// wildcard on a longer domain beats one on a shorter domain.
func (p pattern) specificity() int {
	if !p.wildcard {
		return 1 << 16 // longer than any host name
	}
	return len(p.host)
}

func parsePattern(s string) (pattern, error) {
	in := strings.TrimSpace(s)
	switch {
	case in == "":
		return pattern{}, errors.New("empty pattern: give a host such as example.com or *.example.com")
	case strings.Contains(in, "://"):
		return pattern{}, fmt.Errorf("pattern %q: give a host, not a URL (drop the scheme)", s)
	case strings.ContainsAny(in, "/?#"):
		return pattern{}, fmt.Errorf("pattern %q: give a host, not a URL (drop the path)", s)
	case strings.Contains(in, "@"):
		return pattern{}, fmt.Errorf("pattern %q: give a host, not a URL (drop the user name)", s)
	}
	host, portStr, err := splitPattern(in)
	if err != nil {
		return pattern{}, fmt.Errorf("pattern %q: %w", s, err)
	}
	var p pattern
	if portStr != "" {
		if p.port, err = parsePort(portStr); err != nil {
			return pattern{}, fmt.Errorf("pattern %q: %w", s, err)
		}
	}
	lower := strings.ToLower(host)
	if rest, ok := strings.CutPrefix(lower, "*."); ok {
		p.wildcard = true
		lower = rest
	}
	if strings.Contains(lower, "*") {
		return pattern{}, fmt.Errorf("pattern %q: the only wildcard allowed is a leading \"*.\" (as in *.example.com)", s)
	}
	if p.host, p.ip, err = canonicalHost(lower); err != nil {
		return pattern{}, fmt.Errorf("pattern %q: %w", s, err)
	}
	if p.wildcard && p.ip {
		return pattern{}, fmt.Errorf("pattern %q: a wildcard needs a domain name, not an IP address", s)
	}
	return p, nil
}

// splitPattern splits "host", "host:port", "[v6]", "[v6]:port" and a bare IPv6 address.
func splitPattern(s string) (host, port string, err error) {
	if rest, ok := strings.CutPrefix(s, "["); ok {
		end := strings.Index(rest, "]")
		if end < 0 {
			return "", "", errors.New("missing \"]\" after an IPv6 address")
		}
		host, after := rest[:end], rest[end+1:]
		if !strings.Contains(host, ":") {
			return "", "", errors.New("brackets are only for IPv6 addresses")
		}
		if after == "" {
			return host, "", nil
		}
		port, ok := strings.CutPrefix(after, ":")
		if !ok || port == "" {
			return "", "", fmt.Errorf("unexpected %q after the IPv6 address", after)
		}
		return host, port, nil
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", nil
	case 1:
		host, port, _ := strings.Cut(s, ":")
		if port == "" {
			return "", "", errors.New("empty port after \":\"")
		}
		return host, port, nil
	default:
		return s, "", nil // a bare IPv6 address, checked by canonicalHost
	}
}

// parsePort parses a decimal TCP port in 1-65535.
func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || len(s) > 5 || strings.ContainsAny(s, "+-") || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not a number between 1 and 65535", s)
	}
	return n, nil
}

// canonicalHost normalises a host as a sandbox or a user writes it: lowercase, without a trailing dot
// or IPv6 brackets, IPs in canonical form with IPv4-mapped IPv6 unmapped (so "::ffff:10.0.0.1" is
// treated as the 10.0.0.1 it reaches). It rejects anything that is neither an IP nor a host name.
func canonicalHost(h string) (host string, isIP bool, err error) {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if inner, ok := strings.CutPrefix(h, "["); ok {
		if h, ok = strings.CutSuffix(inner, "]"); !ok || !strings.Contains(h, ":") {
			return "", false, fmt.Errorf("host %q is not a valid IPv6 address", inner)
		}
	}
	if h == "" {
		return "", false, errors.New("missing host")
	}
	if strings.Contains(h, ":") || strings.Contains(h, "%") {
		a, err := netip.ParseAddr(h)
		if err != nil || a.Zone() != "" {
			return "", false, fmt.Errorf("host %q is not a valid IP address (zones are not allowed)", h)
		}
		return a.Unmap().String(), true, nil
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String(), true, nil
	}
	if err := checkHostname(h); err != nil {
		return "", false, err
	}
	return h, false, nil
}

// checkHostname accepts DNS names of letters, digits, '-' and '_'. A name whose last label starts
// with a digit is refused: no top-level domain does, and resolvers read forms like "2130706433" or
// "0x7f.1" as IP addresses, which would slip past the rules for bare IPs.
func checkHostname(h string) error {
	if len(h) > 253 {
		return fmt.Errorf("host name %.20q... is longer than 253 characters", h)
	}
	var last string
	for rest := h; rest != ""; {
		var l string
		l, rest, _ = strings.Cut(rest, ".")
		if l == "" || len(l) > 63 {
			return fmt.Errorf("host name %q has an empty or over-long label", h)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("host name %q has a label that starts or ends with '-'", h)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("host name %q contains %q", h, rune(c))
			}
		}
		last = l
	}
	if strings.HasSuffix(h, ".") {
		return fmt.Errorf("host name %q has an empty or over-long label", h)
	}
	if '0' <= last[0] && last[0] <= '9' {
		return fmt.Errorf("host %q looks numeric but is not a valid IP address", h)
	}
	return nil
}

// joinHostPort is net.JoinHostPort for an int port.
func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}
