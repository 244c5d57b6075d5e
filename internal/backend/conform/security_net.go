package conform

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// netProbe is the python3 helper every network check runs in the sandbox. It reads
// targets from the environment ("HOST PORT" pairs separated by commas) and prints a FAIL
// line for each that it reached. A "remote" target must be unreachable outright (no
// route, refused by policy): a timeout, a reset or a datagram that left means a route out
// exists. A "local" target is the sandbox's own loopback, where nothing of the host may
// answer.
const netProbe = `
import os, socket, errno
UNREACHABLE = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EACCES, errno.EPERM,
               errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT, errno.ENETDOWN}
def targets(name):
    out = []
    for t in filter(None, os.environ.get(name, "").split(",")):
        h, p = t.rsplit(" ", 1)
        out.append((h, int(p)))
    return out
def family(h):
    return socket.AF_INET6 if ":" in h else socket.AF_INET
def outcome(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if isinstance(e, OSError) and e.errno else type(e).__name__
def tcp(h, p, remote):
    try:
        s = socket.socket(family(h), socket.SOCK_STREAM)
    except OSError:
        return
    s.settimeout(3)
    try:
        s.connect((h, p))
        print("FAIL connected over TCP to", h, p)
    except OSError as e:
        if remote and getattr(e, "errno", None) not in UNREACHABLE:
            print("FAIL TCP to", h, p, "got", outcome(e), "rather than no route: a route out exists")
    finally:
        s.close()
def udp(h, p, remote, payload=b"paddock-probe"):
    try:
        s = socket.socket(family(h), socket.SOCK_DGRAM)
    except OSError:
        return
    s.settimeout(2 if remote else 0.5)
    try:
        s.sendto(payload, (h, p))
        if remote:
            print("FAIL a UDP datagram left for", h, p)
        data = s.recv(4096)
        print("FAIL an answer came over UDP from", h, p, repr(data[:40]))
    except OSError as e:
        if remote and getattr(e, "errno", None) not in UNREACHABLE:
            print("FAIL UDP to", h, p, "got", outcome(e), "rather than no route")
    finally:
        s.close()
def http(h, p):
    # What a client with the proxy variables unset does: straight to the address.
    try:
        s = socket.socket(family(h), socket.SOCK_STREAM)
    except OSError:
        return
    s.settimeout(3)
    try:
        s.connect((h, p))
        s.sendall(b"GET /latest/meta-data/ HTTP/1.0\r\nHost: " + h.encode() + b"\r\n\r\n")
        answer = s.recv(100)
        if answer:
            print("FAIL HTTP to", h, p, "answered", repr(answer.split(b"\r\n")[0]))
    except OSError:
        pass
    finally:
        s.close()
for h, p in targets("TCP_REMOTE"):
    tcp(h, p, True)
for h, p in targets("TCP_LOCAL"):
    tcp(h, p, False)
for h, p in targets("UDP_REMOTE"):
    udp(h, p, True)
for h, p in targets("UDP_LOCAL"):
    udp(h, p, False)
for h, p in targets("HTTP"):
    http(h, p)
`

// hostListeners are a TCP listener and a UDP socket on the host that record anything
// reaching them from the sandbox.
type hostListeners struct {
	tcp  []net.Listener
	udp  []net.PacketConn
	mu   sync.Mutex
	seen []string
}

// listenHost listens on TCP and UDP at each address ("" for every address), each on a
// port of its own.
func listenHost(t T, addrs ...string) *hostListeners {
	hl := &hostListeners{}
	for _, a := range addrs {
		ln, err := net.Listen("tcp", net.JoinHostPort(a, "0"))
		if err != nil {
			t.Fatalf("listen on the host at %q: %v", a, err)
		}
		pc, err := net.ListenPacket("udp", net.JoinHostPort(a, "0"))
		if err != nil {
			t.Fatalf("listen on the host at %q: %v", a, err)
		}
		hl.tcp, hl.udp = append(hl.tcp, ln), append(hl.udp, pc)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				hl.record("TCP connection to " + ln.Addr().String() + " from " + c.RemoteAddr().String())
				c.Close()
			}
		}()
		go func() {
			buf := make([]byte, 1500)
			for {
				_, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				hl.record("UDP datagram to " + pc.LocalAddr().String() + " from " + from.String())
			}
		}()
	}
	t.Cleanup(hl.close)
	return hl
}

func (hl *hostListeners) record(s string) {
	hl.mu.Lock()
	hl.seen = append(hl.seen, s)
	hl.mu.Unlock()
}

func (hl *hostListeners) close() {
	for _, ln := range hl.tcp {
		ln.Close()
	}
	for _, pc := range hl.udp {
		pc.Close()
	}
}

// check fails the test if anything reached the host's sockets.
func (hl *hostListeners) check(t T) {
	t.Helper()
	time.Sleep(100 * time.Millisecond) // a datagram in flight
	hl.mu.Lock()
	defer hl.mu.Unlock()
	if len(hl.seen) > 0 {
		t.Errorf("the host received from the sandbox:\n  %s", strings.Join(hl.seen, "\n  "))
	}
}

func port(a net.Addr) int {
	_, p, _ := net.SplitHostPort(a.String())
	n, _ := strconv.Atoi(p)
	return n
}

// pairs joins hosts with a port in the form netProbe reads.
func pairs(port int, hosts ...string) string {
	var out []string
	for _, h := range hosts {
		out = append(out, fmt.Sprintf("%s %d", h, port))
	}
	return strings.Join(out, ",")
}

// hostAddrs returns the host's own addresses that a sandbox with a route out would reach:
// every global or private unicast address, IPv4 and IPv6.
func hostAddrs(t T) []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() || !ipn.IP.IsGlobalUnicast() {
			continue
		}
		out = append(out, ipn.IP.String())
	}
	return out
}

// Public addresses that answer on the internet (Cloudflare's and Google's resolvers).
var publicV4, publicV6 = []string{"1.1.1.1", "8.8.8.8"}, []string{"2606:4700:4700::1111", "2001:4860:4860::8888"}

// testEgress checks that no packet leaves the sandbox by any means but the proxies: raw
// TCP and UDP to public IPv4 and IPv6 addresses and to the host's own addresses, plain
// HTTP to a bare IP with the proxy variables unset, and ICMP and raw sockets. The host
// listens on each of its addresses to see what arrives.
func testEgress(t T, sb *sandbox) {
	hl := listenHost(t, "")
	host := hostAddrs(t)
	tcpPort, udpPort := port(hl.tcp[0].Addr()), port(hl.udp[0].LocalAddr())
	public := append(append([]string(nil), publicV4...), publicV6...)
	fails := sb.probe(t, netProbe+`
import socket
for args in [(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP), (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6),
             (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP), (socket.AF_PACKET, socket.SOCK_RAW, 0)]:
    try:
        socket.socket(*args).close()
        print("FAIL a raw socket", args, "could be made")
    except OSError:
        pass
for h in ["1.1.1.1", "8.8.8.8"]:
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
    except OSError:
        continue
    try:
        s.sendto(b"\x08\x00\xf7\xff\x00\x00\x00\x00", (h, 0))
        print("FAIL an ICMP echo left for", h)
    except OSError:
        pass
print("done")
`,
		"TCP_REMOTE="+pairs(tcpPort, host...)+","+pairs(443, public...)+","+pairs(53, public...),
		"UDP_REMOTE="+pairs(udpPort, host...)+","+pairs(53, public...)+","+pairs(443, public...),
		"HTTP="+pairs(tcpPort, host...)+","+pairs(80, public...))
	noFailures(t, "traffic left the sandbox", fails)
	hl.check(t)
}

// testDNS checks no name resolves and no resolver answers: not the sandbox's, not the
// host's (from the host's /etc/resolv.conf), not a public one, over UDP or TCP.
func testDNS(t T, sb *sandbox) {
	servers := append(append([]string(nil), publicV4...), publicV6...)
	if data, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "nameserver" {
				servers = append(servers, f[1])
			}
		}
	}
	fails := sb.probe(t, netProbe+`
import socket, struct
for name in ["example.com", "github.com", os.environ["UNIQUE"]]:
    try:
        print("FAIL", name, "resolved to", socket.getaddrinfo(name, 443)[0][4])
    except OSError:
        pass
servers = os.environ["SERVERS"].split(",")
try:
    for l in open("/etc/resolv.conf"):
        f = l.split()
        if len(f) == 2 and f[0] == "nameserver":
            servers.append(f[1])
except OSError:
    pass
query = struct.pack(">HHHHHH", 0x5044, 0x0100, 1, 0, 0, 0) + b"".join(
    bytes([len(p)]) + p.encode() for p in "example.com".split(".")) + b"\0" + struct.pack(">HH", 1, 1)
for ns in servers:
    local = ns.startswith("127.") or ns == "::1"
    udp(ns, 53, not local, query)
    tcp(ns, 53, not local)
print("done")
`, "SERVERS="+strings.Join(servers, ","), "UNIQUE=paddock-"+randomHex(4)+".example.com")
	noFailures(t, "name resolution from the sandbox", fails)
}

// testMetadata checks the cloud metadata services (AWS, GCP, Azure, ECS, Alibaba, AWS's
// IPv6 one) are out of reach: no route to them at all.
func testMetadata(t T, sb *sandbox) {
	fails := sb.probe(t, netProbe+`print("done")`,
		"TCP_REMOTE="+pairs(80, "169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254"),
		"UDP_REMOTE="+pairs(53, "169.254.169.253"),
		"HTTP="+pairs(80, "169.254.169.254", "fd00:ec2::254"))
	noFailures(t, "a metadata service is reachable", fails)
}

// testHostLoopback checks the host's loopback services are out of reach on IPv4 and
// IPv6, over TCP and UDP, by address and by the name localhost.
func testHostLoopback(t T, sb *sandbox) {
	hl := listenHost(t, "127.0.0.1", "::1")
	var tcp, udp []string
	for i := range hl.tcp {
		tp, up := port(hl.tcp[i].Addr()), port(hl.udp[i].LocalAddr())
		h := []string{"127.0.0.1", "::1"}[i]
		tcp = append(tcp, pairs(tp, h, "localhost"))
		udp = append(udp, pairs(up, h))
	}
	fails := sb.probe(t, netProbe+`print("done")`,
		"TCP_LOCAL="+strings.Join(tcp, ","), "UDP_LOCAL="+strings.Join(udp, ","))
	noFailures(t, "the host's loopback is reachable", fails)
	hl.check(t)
}
