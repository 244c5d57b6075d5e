package vagrant

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/shell"
)

// sshGuest brings the guest up in a machine and reaches it over SSH: one connection per
// machine, kept, and one SSH session per stream to the guest.
type sshGuest struct {
	v     *Vagrant
	mu    sync.Mutex
	conns map[backend.ID]*sshConn
}

type sshConn struct {
	client *ssh.Client
}

// hostKeyFile is where a machine's host key is pinned at first contact.
func (g *sshGuest) hostKeyFile(id backend.ID) string {
	return filepath.Join(g.v.sandboxDir(id), "ssh_host_key")
}

func (g *sshGuest) forget(id backend.ID, fresh bool) {
	g.mu.Lock()
	c := g.conns[id]
	delete(g.conns, id)
	g.mu.Unlock()
	if c != nil {
		c.client.Close()
	}
	if fresh {
		os.Remove(g.hostKeyFile(id))
	}
}

// client returns the machine's SSH connection, opening one as `vagrant ssh-config` says.
func (g *sshGuest) client(ctx context.Context, id backend.ID, m meta) (*ssh.Client, error) {
	g.mu.Lock()
	c := g.conns[id]
	g.mu.Unlock()
	if c != nil {
		if _, _, err := c.client.SendRequest("keepalive@paddock", true, nil); err == nil {
			return c.client, nil
		}
		g.forget(id, false)
	}
	out, err := g.v.cli.run(ctx, g.v.machine(id, m), "ssh-config")
	if err != nil {
		return nil, err
	}
	cfg, err := parseSSHConfig(out)
	if err != nil {
		return nil, err
	}
	var signers []ssh.Signer
	for _, k := range cfg.Keys {
		data, err := os.ReadFile(k)
		if err != nil {
			continue
		}
		if s, err := ssh.ParsePrivateKey(data); err == nil {
			signers = append(signers, s)
		}
	}
	if len(signers) == 0 {
		return nil, fmt.Errorf("vagrant: no usable SSH key among %v", cfg.Keys)
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	conf := &ssh.ClientConfig{User: cfg.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signers...)},
		HostKeyCallback: g.pinned(id), Timeout: 20 * time.Second}
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("vagrant: reach the machine's SSH at %s: %w", addr, err)
	}
	sc, chans, reqs, err := ssh.NewClientConn(raw, addr, conf)
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("vagrant: SSH to the machine at %s: %w", addr, err)
	}
	client := ssh.NewClient(sc, chans, reqs)
	g.mu.Lock()
	if old := g.conns[id]; old != nil {
		old.client.Close()
	}
	g.conns[id] = &sshConn{client: client}
	g.mu.Unlock()
	return client, nil
}

// pinned accepts the machine's host key the first time and only that key afterwards (a
// machine made anew forgets it first).
func (g *sshGuest) pinned(id backend.ID) ssh.HostKeyCallback {
	return func(_ string, _ net.Addr, key ssh.PublicKey) error {
		file := g.hostKeyFile(id)
		want, err := os.ReadFile(file)
		if errors.Is(err, os.ErrNotExist) {
			return os.WriteFile(file, key.Marshal(), 0o600)
		}
		if err != nil {
			return err
		}
		if !bytes.Equal(want, key.Marshal()) {
			return fmt.Errorf("the machine's SSH host key changed since paddock first reached it (%s)", ssh.FingerprintSHA256(key))
		}
		return nil
	}
}

// run runs a command over SSH and returns its output.
func run(client *ssh.Client, cmd string, stdin io.Reader) (string, error) {
	s, err := client.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	var out, errOut bytes.Buffer
	s.Stdout, s.Stderr, s.Stdin = &out, &errOut, stdin
	if err := s.Run(cmd); err != nil {
		return out.String(), fmt.Errorf("%v: %s", err, tail(errOut.String()+out.String(), 6))
	}
	return out.String(), nil
}

// prepareScript makes the user agent (sudo without a password) and the directories the
// guest needs, as the SSH user with sudo. $1 is the guest binary's sha256; it prints
// "have" when the binary is in place.
const prepareScript = `set -e
id ` + inside.User + ` >/dev/null 2>&1 || sudo -n useradd -m -s /bin/bash ` + inside.User + `
[ -f /etc/sudoers.d/paddock-agent ] || { echo '` + inside.User + ` ALL=(ALL) NOPASSWD:ALL' | sudo -n tee /etc/sudoers.d/paddock-agent >/dev/null; sudo -n chmod 440 /etc/sudoers.d/paddock-agent; }
sudo -n install -d -o ` + inside.User + ` -g ` + inside.User + ` -m 755 ` + inside.Workspace + ` ` + inside.Run + `
sudo -n install -d -m 755 ` + "$(dirname " + inside.GuestBinary + ")" + `
if [ "$(sha256sum ` + inside.GuestBinary + ` 2>/dev/null | cut -d' ' -f1)" = "$1" ]; then echo have; fi
`

// installScript puts stdin at the guest binary's path, atomically.
const installScript = `set -e
sudo -n sh -c 'cat > ` + inside.GuestBinary + `.new && chmod 755 ` + inside.GuestBinary + `.new && mv ` + inside.GuestBinary + `.new ` + inside.GuestBinary + `'
sha256sum ` + inside.GuestBinary + ` | cut -d' ' -f1
`

// guestSocket is the resident guest's socket in the machine.
const guestSocket = inside.GuestSocket

// ensure installs the guest binary (when the machine lacks this one) and starts the
// resident guest as agent, unless it runs; it returns once the guest's socket is there.
func (g *sshGuest) ensure(ctx context.Context, id backend.ID, m meta) error {
	client, err := g.client(ctx, id, m)
	if err != nil {
		return err
	}
	out, err := run(client, "sh -s -- "+shell.Quote(m.GuestSHA256), strings.NewReader(prepareScript))
	if err != nil {
		return fmt.Errorf("vagrant: prepare the machine for the guest: %w", err)
	}
	if strings.TrimSpace(out) != "have" {
		f, err := os.Open(m.GuestBinary)
		if err != nil {
			return fmt.Errorf("vagrant: the guest binary: %w", err)
		}
		defer f.Close()
		sum, err := run(client, "sh -c "+shell.Quote(installScript), f)
		if err != nil {
			return fmt.Errorf("vagrant: copy the guest into the machine: %w", err)
		}
		if got := strings.TrimSpace(sum); got != m.GuestSHA256 && m.GuestSHA256 != "" {
			return fmt.Errorf("vagrant: the guest in the machine has sha256 %s, want %s", got, m.GuestSHA256)
		}
	}
	var env []string
	for _, kv := range m.Env {
		env = append(env, shell.Quote(kv))
	}
	start := `set -e
pidf=` + inside.Run + `/guest.pid
if [ -f $pidf ] && sudo -n kill -0 "$(cat $pidf)" 2>/dev/null && [ -S ` + guestSocket + ` ]; then exit 0; fi
sudo -n rm -f ` + guestSocket + `
sudo -n -u ` + inside.User + ` env -i ` + strings.Join(env, " ") + ` setsid ` + inside.GuestBinary + ` ` + inside.GuestCommand +
		` serve --socket ` + guestSocket + ` --sandbox ` + shell.Quote(m.Name) + ` </dev/null >>/tmp/paddock-guest.log 2>&1 &
echo $! | sudo -n tee $pidf >/dev/null
i=0
while [ $i -lt 200 ]; do [ -S ` + guestSocket + ` ] && exit 0; sleep 0.1; i=$((i+1)); done
echo "the guest did not start: $(tail -5 /tmp/paddock-guest.log)" >&2
exit 1
`
	if _, err := run(client, "sh -s", strings.NewReader(start)); err != nil {
		return fmt.Errorf("vagrant: start the guest in the machine: %w", err)
	}
	return nil
}

// dial opens an SSH session running `paddock agent connect` as agent, bridged to the
// resident guest's socket: its stdin and stdout are the stream.
func (g *sshGuest) dial(ctx context.Context, id backend.ID, m meta) (net.Conn, error) {
	client, err := g.client(ctx, id, m)
	if err != nil {
		return nil, err
	}
	s, err := client.NewSession()
	if err != nil {
		g.forget(id, false)
		return nil, fmt.Errorf("vagrant: open an SSH session: %w", err)
	}
	stdin, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	stdout, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	cmd := "sudo -n -u " + inside.User + " " + inside.GuestBinary + " " + inside.GuestCommand + " connect --socket " + guestSocket
	if err := s.Start(cmd); err != nil {
		s.Close()
		return nil, fmt.Errorf("vagrant: run the guest bridge: %w", err)
	}
	return &sessionConn{s: s, r: stdout, w: stdin, local: client.LocalAddr(), remote: client.RemoteAddr()}, nil
}

// sessionConn is an SSH session's stdin and stdout as a net.Conn.
type sessionConn struct {
	s             *ssh.Session
	r             io.Reader
	w             io.WriteCloser
	local, remote net.Addr
	once          sync.Once
}

func (c *sessionConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Bridged implements guestclient.Bridged: each connection is a command in an SSH session.
func (c *sessionConn) Bridged() bool               { return true }
func (c *sessionConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *sessionConn) Close() error {
	c.once.Do(func() { c.w.Close(); c.s.Close() })
	return nil
}
func (c *sessionConn) LocalAddr() net.Addr                { return c.local }
func (c *sessionConn) RemoteAddr() net.Addr               { return c.remote }
func (c *sessionConn) SetDeadline(t time.Time) error      { return nil }
func (c *sessionConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *sessionConn) SetWriteDeadline(t time.Time) error { return nil }
