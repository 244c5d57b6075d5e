package guestcmd

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// newIsolate is `guest isolate-network`: it removes (or, failing that, takes down) every
// interface but loopback in
// the network namespace it runs in, and checks that no route is left but loopback's.
// Backends whose sandboxes always get an interface (a Kubernetes pod) run it once,
// with CAP_NET_ADMIN, before the sandbox's own processes start without it: they then
// have loopback alone, which is all the closed network's tunnels need.
func newIsolate(s IO) command {
	return command{name: "isolate-network",
		short: "Take every interface but loopback down and check no route is left (needs CAP_NET_ADMIN)",
		setup: func(*flag.FlagSet) runFunc {
			return noArgs(func(context.Context) error {
				down, err := IsolateNetwork()
				if err != nil {
					return err
				}
				fmt.Fprintf(s.Out, "network isolated: %s down; no route but loopback's\n", strings.Join(orNone(down), ", "))
				return nil
			})
		}}
}

func orNone(names []string) []string {
	if len(names) == 0 {
		return []string{"no interface"}
	}
	return names
}

// IsolateNetwork removes every interface but loopback (takes it down where it cannot be
// removed) and returns their names; it fails if a route through any of them remains.
func IsolateNetwork() ([]string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	var down []string
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		// Gone is best: a link that is not there cannot be brought back up. A link that
		// cannot be deleted is taken down.
		if deleteLink(ifc.Index) == nil {
			down = append(down, ifc.Name)
			continue
		}
		ifr, err := unix.NewIfreq(ifc.Name)
		if err != nil {
			return down, err
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
			return down, fmt.Errorf("flags of %s: %w", ifc.Name, err)
		}
		ifr.SetUint16(ifr.Uint16() &^ unix.IFF_UP)
		if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
			return down, fmt.Errorf("take %s down: %w (this needs CAP_NET_ADMIN)", ifc.Name, err)
		}
		down = append(down, ifc.Name)
	}
	for _, table := range []string{"/proc/net/route", "/proc/net/ipv6_route"} {
		left, err := routesBeyondLoopback(table)
		if err != nil {
			return down, err
		}
		if len(left) > 0 {
			return down, fmt.Errorf("routes left after taking the interfaces down (%s): %s", table, strings.Join(left, "; "))
		}
	}
	return down, nil
}

// routesBeyondLoopback lists the routes of a /proc/net route table whose interface is
// not lo. A missing table (no IPv6) has none.
func routesBeyondLoopback(table string) ([]string, error) {
	f, err := os.Open(table)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseRoutes(f, table == "/proc/net/ipv6_route"), nil
}

// parseRoutes reads a route table: /proc/net/route has a header and the interface first;
// /proc/net/ipv6_route no header and the interface last.
func parseRoutes(r io.Reader, ipv6 bool) []string {
	var left []string
	sc := bufio.NewScanner(r)
	for first := true; sc.Scan(); first = false {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || (!ipv6 && first) {
			continue
		}
		iface := fields[0]
		if ipv6 {
			iface = fields[len(fields)-1]
		}
		if iface != "lo" {
			left = append(left, sc.Text())
		}
	}
	return left
}

// deleteLink deletes the network interface of the index, with an RTM_DELLINK request on
// a netlink socket, and waits for the kernel's answer.
func deleteLink(index int) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	// struct nlmsghdr, then struct ifinfomsg: family, pad, type, index, flags, change.
	msg := make([]byte, unix.NLMSG_HDRLEN+unix.SizeofIfInfomsg)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], unix.RTM_DELLINK)
	ne.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	ne.PutUint32(msg[8:], 1)
	msg[unix.NLMSG_HDRLEN] = unix.AF_UNSPEC
	ne.PutUint32(msg[unix.NLMSG_HDRLEN+4:], uint32(int32(index)))
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4 {
			if errno := int32(ne.Uint32(m.Data[0:4])); errno != 0 {
				return syscall.Errno(-errno)
			}
			return nil
		}
	}
	return errors.New("no answer from the kernel to RTM_DELLINK")
}
