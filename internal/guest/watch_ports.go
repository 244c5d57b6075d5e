package guest

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// Ports of paddock's own tunnels inside a closed sandbox: the credential proxy and the
// egress proxy. Their listeners are the guest's, and so never reported; the constants
// keep them out even when another process holds them.
var tunnelPorts = map[int]bool{4180: true, 3128: true}

// listener is a TCP socket in the LISTEN state, from /proc/net/tcp or tcp6.
type listener struct {
	port  int
	addr  string
	inode string
}

// portState is what the port watcher knows between two looks.
type portState struct {
	// open are the reported ports, with the process that listens.
	open map[int]openPort
	// foreign are socket inodes no process of the sandbox holds: in a sandbox that
	// shares the host's network namespace, /proc/net/tcp lists the host's listeners too.
	foreign map[string]bool
	// baseline is false until the first look, whose listeners are not news.
	baseline bool
	// buf holds the socket tables between looks, so that a look reads them without
	// allocating.
	buf []byte
}

type openPort struct {
	addr, process, pid string
}

// scanPorts looks at the listening sockets and reports those that opened or closed since
// the last look. own reports whether a port is one of the guest's own listeners.
func (st *portState) scanPorts(proc string, own func(int) bool, emit func(*guestpb.Event)) {
	var ls []listener
	for _, name := range []string{"net/tcp", "net/tcp6"} {
		data, err := readInto(&st.buf, filepath.Join(proc, name))
		if err == nil {
			ls = append(ls, parseListeners(data)...)
		}
	}
	now := map[int]listener{}
	for _, l := range ls {
		if tunnelPorts[l.port] || own(l.port) {
			continue
		}
		if prev, ok := now[l.port]; ok && prev.addr != "" && !isWildcard(l.addr) {
			continue // the same port in tcp and tcp6: keep the wider address
		}
		now[l.port] = l
	}
	if st.open == nil {
		st.open, st.foreign = map[int]openPort{}, map[string]bool{}
	}
	if !st.baseline {
		st.baseline = true
		for port, l := range now {
			st.open[port] = openPort{addr: l.addr}
		}
		return
	}
	var fresh []listener
	for port, l := range now {
		if _, ok := st.open[port]; !ok && !st.foreign[l.inode] {
			fresh = append(fresh, l)
		}
	}
	if len(fresh) > 0 {
		owners := socketOwners(proc, fresh)
		for _, l := range fresh {
			o, ok := owners[l.inode]
			if !ok && l.inode != "0" {
				st.foreign[l.inode] = true
				continue
			}
			st.open[l.port] = openPort{addr: l.addr, process: o.process, pid: o.pid}
			attrs := map[string]string{"port": strconv.Itoa(l.port), "address": l.addr}
			if o.process != "" {
				attrs["process"], attrs["pid"] = o.process, o.pid
			}
			emit(newEvent(guestproto.EventPortOpen, attrs))
		}
	}
	for port, o := range st.open {
		if _, ok := now[port]; ok {
			continue
		}
		delete(st.open, port)
		attrs := map[string]string{"port": strconv.Itoa(port), "address": o.addr}
		if o.process != "" {
			attrs["process"], attrs["pid"] = o.process, o.pid
		}
		emit(newEvent(guestproto.EventPortClosed, attrs))
	}
	if len(st.foreign) > 4096 {
		st.foreign = map[string]bool{} // inodes are not reused soon; forget them all now and then
	}
}

func isWildcard(addr string) bool { return addr == "0.0.0.0" || addr == "::" }

// readInto reads the whole file at path into *buf, growing it as needed, and returns
// what it read: /proc files report no size, so the buffer is kept between reads.
func readInto(buf *[]byte, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if cap(*buf) == 0 {
		*buf = make([]byte, 0, 4096)
	}
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			*buf = b
			return b, nil
		}
		if err != nil {
			*buf = b
			return nil, err
		}
	}
}

// parseListeners reads the LISTEN sockets of a /proc/net/tcp or tcp6 table.
func parseListeners(data []byte) []listener {
	var out []listener
	_, data, _ = bytes.Cut(data, []byte("\n")) // the header
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode: the
		// state is read before the line is split, as nearly every line is not a listener.
		if st := fieldAt(line, 3); string(st) != "0A" {
			continue
		}
		f := strings.Fields(string(line))
		if len(f) < 10 {
			continue
		}
		host, portHex, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil {
			continue
		}
		out = append(out, listener{port: int(port), addr: procAddr(host), inode: f[9]})
	}
	return out
}

// fieldAt is the i-th space-separated field of line, or nil.
func fieldAt(line []byte, i int) []byte {
	for {
		line = bytes.TrimLeft(line, " ")
		end := bytes.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		if i == 0 {
			return line[:end]
		}
		if end == len(line) {
			return nil
		}
		line, i = line[end:], i-1
	}
}

// procAddr decodes an address of /proc/net/tcp: 32-bit words in host byte order
// (little-endian here), hex-encoded.
func procAddr(h string) string {
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return h
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return net.IP(b).String()
}

type socketOwner struct {
	process, pid string
}

// socketOwners finds which process holds each listener's socket, reading /proc/PID/fd of
// every process it may read. It runs only when a new listener appears.
func socketOwners(proc string, ls []listener) map[string]socketOwner {
	want := map[string]bool{}
	for _, l := range ls {
		want["socket:["+l.inode+"]"] = true
	}
	found := map[string]socketOwner{}
	pids, _ := os.ReadDir(proc)
	for _, p := range pids {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		fdDir := filepath.Join(proc, p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !want[link] {
				continue
			}
			comm, _ := os.ReadFile(filepath.Join(proc, p.Name(), "comm"))
			inode := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
			found[inode] = socketOwner{process: strings.TrimSpace(string(comm)), pid: p.Name()}
			if len(found) == len(want) {
				return found
			}
		}
	}
	return found
}

// Port is a TCP port a process of the sandbox listens on, as `paddock guest ports` lists it.
type Port struct {
	Port    int    `json:"port"`
	Address string `json:"address"`
	Process string `json:"process,omitempty"`
	PID     string `json:"pid,omitempty"`
}

// Listening lists the ports processes of the sandbox listen on now (proc is /proc),
// smallest first: the same ports the watcher reports, without paddock's own tunnels and
// listeners, and without sockets no process of the sandbox holds (the host's, when the
// sandbox shares its network namespace).
func Listening(proc string) []Port {
	var ls []listener
	for _, name := range []string{"net/tcp", "net/tcp6"} {
		if data, err := os.ReadFile(filepath.Join(proc, name)); err == nil {
			ls = append(ls, parseListeners(data)...)
		}
	}
	owners := socketOwners(proc, ls)
	byPort := map[int]Port{}
	for _, l := range ls {
		o, ok := owners[l.inode]
		if tunnelPorts[l.port] || !ok || o.process == "paddock" {
			continue
		}
		if prev, ok := byPort[l.port]; ok && !isWildcard(l.addr) && prev.Address != "" {
			continue // the same port in tcp and tcp6: keep the wider address
		}
		byPort[l.port] = Port{Port: l.port, Address: l.addr, Process: o.process, PID: o.pid}
	}
	out := make([]Port, 0, len(byPort))
	for _, p := range byPort {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Port) int { return a.Port - b.Port })
	return out
}
