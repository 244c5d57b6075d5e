package sshhost

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/hashicorp/yamux"
	"golang.org/x/crypto/ssh"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/shell"
	"github.com/paddockhq/paddock/internal/tailbuf"
)

// Link is one SSH connection to a host, running `paddock backend serve` there: every call
// and every stream to the host's sandboxes goes through it.
type Link struct {
	name    string
	client  *ssh.Client
	session *ssh.Session
	mux     *yamux.Session
	stderr  *tailbuf.Buffer
	// Backend is the host's backend serving the sandboxes (bwrap, docker).
	Backend string
	// Copied says paddock was copied to the host (missing or outdated) when the link opened.
	Copied bool
	// Arch is the host's machine (uname -m); Home where paddock keeps its files there.
	Arch, Home string
}

// OpenOptions configure Open.
type OpenOptions struct {
	// Binary is the local paddock copied to a host that lacks it (the running binary).
	Binary string
	// Progress, when set, receives what Open does, in words.
	Progress func(string)
	// HostKey checks the host's key; nil means the key pinned in the Host.
	HostKey ssh.HostKeyCallback
	// Getenv reads SSH_AUTH_SOCK (the ssh-agent) and HOME (the default key files); nil
	// means this process's environment.
	Getenv func(string) string
}

// Open connects to a host, puts paddock there when it is missing or not the Binary
// (hosts of the daemon's architecture only), and starts `paddock backend serve`.
func Open(ctx context.Context, name string, h Host, o OpenOptions) (*Link, error) {
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	check := o.HostKey
	if check == nil {
		check = pinned(name, h)
	}
	client, err := dialSSH(ctx, name, h, check, o.Getenv)
	if err != nil {
		return nil, err
	}
	l := &Link{name: name, client: client, stderr: &tailbuf.Buffer{}}
	if err := l.prepare(ctx, h, o); err != nil {
		client.Close()
		return nil, err
	}
	if err := l.serve(); err != nil {
		client.Close()
		return nil, err
	}
	return l, nil
}

// probeScript prints the host's OS, machine, paddock's directory there ($1, else the
// default) and the sha256 of the paddock binary in it, if any.
const probeScript = `if [ -n "$1" ]; then h="$1"; elif [ "$(id -u)" = 0 ]; then h=/var/lib/paddock-ssh; else h="$HOME/.paddock"; fi
echo "os=$(uname -s)"
echo "arch=$(uname -m)"
echo "home=$h"
if [ -f "$h/bin/paddock" ]; then echo "sha256=$(sha256sum "$h/bin/paddock" | cut -d' ' -f1)"; fi
`

// installScript puts stdin at $1/bin/paddock, atomically, and prints its sha256.
const installScript = `set -e
umask 022
mkdir -p "$1/bin"
[ "$(id -u)" != 0 ] || chmod 711 "$1"
cat > "$1/bin/.paddock.new"
chmod 755 "$1/bin/.paddock.new"
mv -f "$1/bin/.paddock.new" "$1/bin/paddock"
sha256sum "$1/bin/paddock" | cut -d' ' -f1
`

// goArch maps uname -m to Go's names.
var goArch = map[string]string{"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "armv7l": "arm", "armv6l": "arm",
	"i686": "386", "i386": "386", "riscv64": "riscv64", "ppc64le": "ppc64le", "s390x": "s390x"}

// prepare finds paddock's directory on the host and copies the binary there when the
// host lacks it or has another build.
func (l *Link) prepare(ctx context.Context, h Host, o OpenOptions) error {
	out, err := l.run(ctx, "sh -s -- "+shell.Quote(h.Home), strings.NewReader(probeScript))
	if err != nil {
		return fmt.Errorf("host %s: look for paddock there: %w", l.name, err)
	}
	info := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			info[k] = strings.TrimSpace(v)
		}
	}
	l.Arch, l.Home = info["arch"], info["home"]
	if info["os"] != "Linux" || l.Home == "" {
		return fmt.Errorf("host %s runs %q, not Linux: paddock runs sandboxes on Linux hosts only", l.name, info["os"])
	}
	if goArch[l.Arch] != runtime.GOARCH || runtime.GOOS != "linux" {
		if info["sha256"] != "" {
			return nil // the user's own build for that machine: the hello says whether it speaks this wire
		}
		return fmt.Errorf("host %s is a Linux %s machine, and this paddock is built for %s/%s: build paddock for it "+
			"(GOOS=linux GOARCH=%s CGO_ENABLED=0 go build -o paddock ./cmd/paddock), copy it to %s/bin/paddock on the host, then try again",
			l.name, l.Arch, runtime.GOOS, runtime.GOARCH, orUnknown(goArch[l.Arch]), l.Home)
	}
	want, err := backend.FileSHA256(o.Binary)
	if err != nil {
		return fmt.Errorf("the paddock binary to copy to host %s: %w", l.name, err)
	}
	if info["sha256"] == want {
		return nil
	}
	f, err := os.Open(o.Binary)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	what := "missing"
	if info["sha256"] != "" {
		what = "another build"
	}
	o.Progress(fmt.Sprintf("copying paddock to %s:%s/bin/paddock (%s there; %s)", l.name, l.Home, what, mib(fi.Size())))
	got, err := l.run(ctx, "sh -c "+shell.Quote(installScript)+" sh "+shell.Quote(l.Home), &progressReader{r: f, total: fi.Size(), report: o.Progress})
	if err != nil {
		return fmt.Errorf("host %s: copy paddock there: %w", l.name, err)
	}
	if strings.TrimSpace(got) != want {
		return fmt.Errorf("host %s: paddock arrived with sha256 %s, want %s", l.name, strings.TrimSpace(got), want)
	}
	l.Copied = true
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "ARCH"
	}
	return s
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// serve starts `paddock backend serve` on the host and joins its wire.
func (l *Link) serve() error {
	s, err := l.client.NewSession()
	if err != nil {
		return fmt.Errorf("host %s: open an SSH session: %w", l.name, err)
	}
	stdin, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return err
	}
	stdout, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return err
	}
	s.Stderr = l.stderr
	home := shell.Quote(l.Home)
	if err := s.Start("cd / && PADDOCK_HOME=" + home + " exec " + home + "/bin/paddock backend serve"); err != nil {
		s.Close()
		return fmt.Errorf("host %s: start paddock there: %w", l.name, err)
	}
	rw := &pipeConn{r: stdout, w: stdin, s: s}
	var h hello
	if err := readLine(rw, &h); err != nil || h.Magic != Magic {
		s.Close()
		s.Wait()
		return fmt.Errorf("host %s: %s/bin/paddock backend serve did not answer as paddock (%v): %s", l.name, l.Home, err, l.stderr.Lines(6))
	}
	if h.Error != nil {
		s.Close()
		return fmt.Errorf("host %s can run no sandbox: %w", l.name, h.Error.err(l.name))
	}
	if h.Protocol != Protocol {
		s.Close()
		return fmt.Errorf("host %s has paddock %s, whose wire (%d) is not this one's (%d): put this version's paddock at %s/bin/paddock there",
			l.name, h.Version, h.Protocol, Protocol, l.Home)
	}
	mux, err := yamux.Client(rw, guestproto.YamuxConfig())
	if err != nil {
		s.Close()
		return err
	}
	l.session, l.mux, l.Backend = s, mux, h.Backend
	return nil
}

// Closed reports whether the link is gone (the connection dropped, or the host's
// process ended).
func (l *Link) Closed() bool { return l.mux.IsClosed() }

// Close ends the link; the host's sandboxes keep running.
func (l *Link) Close() {
	if l.mux != nil {
		l.mux.Close()
	}
	if l.session != nil {
		l.session.Close()
	}
	l.client.Close()
}

// open opens a stream and sends a request on it; ctx ends the stream.
func (l *Link) open(ctx context.Context, req request) (net.Conn, func(), error) {
	st, err := l.mux.OpenStream()
	if err != nil {
		l.Close()
		return nil, nil, fmt.Errorf("host %s: the connection is gone: %w", l.name, err)
	}
	stop := context.AfterFunc(ctx, func() { st.Close() })
	if err := writeLine(st, req); err != nil {
		stop()
		st.Close()
		return nil, nil, fmt.Errorf("host %s: %w", l.name, err)
	}
	return st, func() { stop() }, nil
}

// call makes one call and returns its response.
func (l *Link) call(ctx context.Context, req request) (response, error) {
	st, stop, err := l.open(ctx, req)
	if err != nil {
		return response{}, err
	}
	defer st.Close()
	defer stop()
	var resp response
	if err := readLine(st, &resp); err != nil {
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		return resp, fmt.Errorf("host %s: %s: %w", l.name, req.Op, err)
	}
	return resp, resp.Err.err(l.name)
}

// dial opens a stream to a sandbox's guest.
func (l *Link) dial(ctx context.Context, id backend.ID) (net.Conn, error) {
	st, stop, err := l.open(ctx, request{Op: opDial, ID: id})
	if err != nil {
		return nil, err
	}
	var resp response
	err = readLine(st, &resp)
	stop()
	if err == nil {
		err = resp.Err.err(l.name)
	}
	if err != nil {
		st.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return st, nil
}

// putGuest makes sure the host has the guest binary at path (sum its sha256), sending
// it when the host lacks it; it returns where the host keeps it.
func (l *Link) putGuest(ctx context.Context, path, sum string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("the guest binary: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	st, stop, err := l.open(ctx, request{Op: opPutGuest, SHA256: sum, Size: fi.Size()})
	if err != nil {
		return "", err
	}
	defer st.Close()
	defer stop()
	var resp response
	if err := readLine(st, &resp); err != nil {
		return "", fmt.Errorf("host %s: put the guest there: %w", l.name, err)
	}
	if resp.Send {
		if _, err := io.Copy(st, f); err != nil {
			return "", fmt.Errorf("host %s: send the guest: %w", l.name, err)
		}
		if err := readLine(st, &resp); err != nil {
			return "", fmt.Errorf("host %s: put the guest there: %w", l.name, err)
		}
	}
	if err := resp.Err.err(l.name); err != nil {
		return "", err
	}
	return resp.Path, nil
}

// run runs a command on the host with stdin and returns its output.
func (l *Link) run(ctx context.Context, cmd string, stdin io.Reader) (string, error) {
	s, err := l.client.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	var out strings.Builder
	errOut := &tailbuf.Buffer{}
	s.Stdout, s.Stderr, s.Stdin = &out, errOut, stdin
	if err := s.Run(cmd); err != nil {
		return out.String(), fmt.Errorf("%v: %s", err, errOut.Lines(6))
	}
	return out.String(), nil
}

// pipeConn is an SSH session's stdout and stdin as one stream.
type pipeConn struct {
	r    io.Reader
	w    io.WriteCloser
	s    *ssh.Session
	once sync.Once
}

func (c *pipeConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *pipeConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *pipeConn) Close() error {
	c.once.Do(func() { c.w.Close(); c.s.Close() })
	return nil
}

// progressReader reports how much of a copy has gone, every tenth.
type progressReader struct {
	r            io.Reader
	total, done  int64
	next         int64
	report       func(string)
	reportedDone bool
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.done += int64(n)
	if p.next == 0 {
		p.next = p.total / 10
	}
	if p.total > 0 && p.done >= p.next && !p.reportedDone {
		p.report(fmt.Sprintf("  %s of %s", mib(p.done), mib(p.total)))
		p.next = min(p.done+p.total/10, p.total)
		p.reportedDone = p.done >= p.total
	}
	return n, err
}
