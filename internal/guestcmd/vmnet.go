package guestcmd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/vmspec"
)

// networkUp configures a microVM's one network interface (`--network open`) as the
// monitor's user-mode network expects it, without DHCP: its address, a default route
// through the gateway (the host's loopback, as the monitor forwards it), and the
// resolver in resolvConf. It waits up to wait for the interface to appear.
func networkUp(n vmspec.Network, wait time.Duration, resolvConf string) error {
	dns, err := netip.ParseAddr(n.DNS)
	if err != nil {
		return fmt.Errorf("the network's resolver %q is not an address", n.DNS)
	}
	if _, err := interfaceUp(n, wait); err != nil {
		return err
	}
	os.Remove(resolvConf) // the image's may be a link to a resolver the VM has not
	if err := os.WriteFile(resolvConf, []byte("nameserver "+dns.String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", resolvConf, err)
	}
	return nil
}

// interfaceUp gives the interface that is not loopback (waiting up to wait for it) its
// address, brings it up and routes everything through the gateway; it returns the
// interface's name.
func interfaceUp(n vmspec.Network, wait time.Duration) (string, error) {
	addr, err := netip.ParsePrefix(n.Address)
	if err != nil || !addr.Addr().Is4() {
		return "", fmt.Errorf("the network's address %q is not an IPv4 address with its prefix length", n.Address)
	}
	gw, err := netip.ParseAddr(n.Gateway)
	if err != nil || !gw.Is4() {
		return "", fmt.Errorf("the network's gateway %q is not an IPv4 address", n.Gateway)
	}
	iface, err := findInterface(wait)
	if err != nil {
		return "", err
	}
	name := iface.Name
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	for _, set := range []struct {
		req  uint
		addr []byte
	}{{unix.SIOCSIFADDR, addr.Addr().AsSlice()}, {unix.SIOCSIFNETMASK, prefixMask(addr.Bits())}} {
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			return "", err
		}
		if err := ifr.SetInet4Addr(set.addr); err != nil {
			return "", err
		}
		if err := unix.IoctlIfreq(fd, set.req, ifr); err != nil {
			return "", fmt.Errorf("configure %s (%s): %w", name, n.Address, err)
		}
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return "", err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return "", fmt.Errorf("bring %s up: %w", name, err)
	}
	if err := addDefaultRoute(gw, iface.Index); err != nil {
		return "", fmt.Errorf("the default route through %s: %w", gw, err)
	}
	return name, nil
}

// prefixMask is the IPv4 netmask of a prefix length.
func prefixMask(bits int) []byte {
	m := uint32(0xffffffff) << (32 - bits)
	if bits == 0 {
		m = 0
	}
	return binary.BigEndian.AppendUint32(nil, m)
}

// findInterface waits for the VM's network interface, the one that is not loopback
// (asked of the kernel over netlink, in the calling thread's network namespace).
func findInterface(wait time.Duration) (net.Interface, error) {
	deadline := time.Now().Add(wait)
	for {
		ifaces, _ := net.Interfaces()
		for _, i := range ifaces {
			if i.Flags&net.FlagLoopback == 0 {
				return i, nil
			}
		}
		if time.Now().After(deadline) {
			return net.Interface{}, errors.New("the VM's network interface did not appear")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// addDefaultRoute adds the IPv4 default route through gw on the interface index, with
// one rtnetlink request, and reads the kernel's answer.
func addDefaultRoute(gw netip.Addr, index int) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	attr := func(typ uint16, data []byte) []byte {
		b := binary.NativeEndian.AppendUint16(nil, uint16(unix.SizeofRtAttr+len(data)))
		b = binary.NativeEndian.AppendUint16(b, typ)
		return append(b, data...) // 4-byte data: aligned already
	}
	body := []byte{unix.AF_INET, 0, 0, 0, unix.RT_TABLE_MAIN, unix.RTPROT_BOOT, unix.RT_SCOPE_UNIVERSE, unix.RTN_UNICAST}
	body = binary.NativeEndian.AppendUint32(body, 0) // flags
	body = append(body, attr(unix.RTA_GATEWAY, gw.AsSlice())...)
	body = append(body, attr(unix.RTA_OIF, binary.NativeEndian.AppendUint32(nil, uint32(index)))...)
	msg := binary.NativeEndian.AppendUint32(nil, uint32(unix.SizeofNlMsghdr+len(body)))
	msg = binary.NativeEndian.AppendUint16(msg, unix.RTM_NEWROUTE)
	msg = binary.NativeEndian.AppendUint16(msg, unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	msg = binary.NativeEndian.AppendUint32(msg, 1) // sequence
	msg = binary.NativeEndian.AppendUint32(msg, 0) // port: the kernel's
	msg = append(msg, body...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	if n < unix.SizeofNlMsghdr+4 || binary.NativeEndian.Uint16(buf[4:6]) != unix.NLMSG_ERROR {
		return errors.New("the kernel's answer is not an acknowledgement")
	}
	if code := int32(binary.NativeEndian.Uint32(buf[unix.SizeofNlMsghdr:])); code != 0 {
		return unix.Errno(-code)
	}
	return nil
}
