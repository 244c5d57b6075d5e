// Package sshgate serves the SSH protocol on one connection (an OpenSSH ProxyCommand's
// stdin and stdout) for one sandbox, so that OpenSSH and VS Code Remote-SSH reach a
// sandbox with no sshd inside it: a session becomes an exec through the daemon (with a
// PTY when the client asks for one), and a direct-tcpip channel to the sandbox's own
// loopback becomes a forward through the guest's tunnel. The SSH transport ends in the
// user's own process, which already may do all this through the API, so the client
// authenticates with "none"; what it may reach is what the API lets that process reach.
package sshgate

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
)

// Exec is what a session runs.
type Exec struct {
	Argv       []string
	Env        []string
	TTY        bool
	Rows, Cols uint16
}

// Sandbox is what the gate reaches a sandbox through.
type Sandbox interface {
	// Exec runs a process to its end and returns its exit code.
	Exec(ctx context.Context, e Exec, stdin io.Reader, stdout, stderr io.Writer, resize <-chan [2]uint16) (int, error)
	// Forward connects to a TCP port on the sandbox's loopback.
	Forward(ctx context.Context, port int) (net.Conn, error)
	// Banner is printed when a login shell starts: the sandbox's sessions, how to attach.
	Banner(ctx context.Context) string
}

// HostKey loads the gate's host key from path, making it on first use (ed25519, 0600).
func HostKey(path string) (ssh.Signer, error) {
	if data, err := os.ReadFile(path); err == nil {
		return ssh.ParsePrivateKey(data)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "paddock ssh gate")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	return ssh.NewSignerFromKey(priv)
}

// KnownHostsLine is the known_hosts line that trusts key under alias.
func KnownHostsLine(alias string, key ssh.PublicKey) string {
	return alias + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
}

// Serve speaks SSH on conn until the client leaves.
func Serve(ctx context.Context, conn net.Conn, key ssh.Signer, sb Sandbox) error {
	cfg := &ssh.ServerConfig{NoClientAuth: true, ServerVersion: "SSH-2.0-paddock"}
	cfg.AddHostKey(key)
	sconn, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return fmt.Errorf("ssh handshake: %w", err)
	}
	defer sconn.Close()
	go ssh.DiscardRequests(reqs) // remote forwards (tcpip-forward) and keepalives: refused
	var wg sync.WaitGroup
	for nc := range chans {
		switch nc.ChannelType() {
		case "session":
			wg.Add(1)
			go func() { defer wg.Done(); session(ctx, nc, sb) }()
		case "direct-tcpip":
			wg.Add(1)
			go func() { defer wg.Done(); directTCPIP(ctx, nc, sb) }()
		default:
			nc.Reject(ssh.UnknownChannelType, "paddock serves sessions and forwards to the sandbox's own ports only")
		}
	}
	wg.Wait()
	return nil
}

// session runs one session channel: env and pty requests, then one shell, exec or
// subsystem, whose exit status ends it.
func session(ctx context.Context, nc ssh.NewChannel, sb Sandbox) {
	ch, reqs, err := nc.Accept()
	if err != nil {
		return
	}
	defer ch.Close()
	var e Exec
	resize := make(chan [2]uint16, 8)
	started := false
	done := make(chan struct{})
	start := func(argv []string, banner bool) {
		started = true
		e.Argv = argv
		go func() {
			defer close(done)
			if banner {
				if b := sb.Banner(ctx); b != "" {
					io.WriteString(ch, strings.ReplaceAll(b, "\n", "\r\n"))
				}
			}
			code, err := sb.Exec(ctx, e, ch, ch, ch.Stderr(), resize)
			if err != nil {
				fmt.Fprintf(ch.Stderr(), "paddock: %v\r\n", err)
				if code == 0 {
					code = 255
				}
			}
			ch.CloseWrite()
			ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
			ch.Close()
		}()
	}
	for req := range reqs {
		ok := false
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			if ssh.Unmarshal(req.Payload, &kv) == nil && !started {
				e.Env = append(e.Env, kv.Name+"="+kv.Value)
				ok = true
			}
		case "pty-req":
			var p struct {
				Term             string
				Cols, Rows, W, H uint32
				Modes            string
			}
			if ssh.Unmarshal(req.Payload, &p) == nil && !started {
				e.TTY, e.Rows, e.Cols = true, uint16(p.Rows), uint16(p.Cols)
				e.Env = append(e.Env, "TERM="+p.Term)
				ok = true
			}
		case "window-change":
			var w struct{ Cols, Rows, W, H uint32 }
			if ssh.Unmarshal(req.Payload, &w) == nil {
				select {
				case resize <- [2]uint16{uint16(w.Rows), uint16(w.Cols)}:
				default:
				}
				ok = true
			}
		case "shell":
			if !started {
				start([]string{"bash", "-l"}, e.TTY)
				ok = true
			}
		case "exec":
			var c struct{ Command string }
			if ssh.Unmarshal(req.Payload, &c) == nil && !started {
				start([]string{"bash", "-c", c.Command}, false)
				ok = true
			}
		case "subsystem":
			var s struct{ Name string }
			if ssh.Unmarshal(req.Payload, &s) == nil && s.Name == "sftp" && !started {
				start([]string{"sh", "-c", "for s in /usr/lib/openssh/sftp-server /usr/libexec/sftp-server /usr/lib/sftp-server; do [ -x $s ] && exec $s; done; echo 'no sftp-server in the sandbox' >&2; exit 127"}, false)
				ok = true
			}
		}
		if req.WantReply {
			req.Reply(ok, nil)
		}
	}
	if started {
		<-done
	}
}

// directTCPIP forwards a channel to a port on the sandbox's loopback; any other
// destination is refused.
func directTCPIP(ctx context.Context, nc ssh.NewChannel, sb Sandbox) {
	var d struct {
		Host     string
		Port     uint32
		OrigHost string
		OrigPort uint32
	}
	if err := ssh.Unmarshal(nc.ExtraData(), &d); err != nil {
		nc.Reject(ssh.ConnectionFailed, "bad direct-tcpip request")
		return
	}
	switch d.Host {
	case "localhost", "127.0.0.1", "::1":
	default:
		nc.Reject(ssh.Prohibited, "only the sandbox's own ports (localhost:PORT) can be reached")
		return
	}
	conn, err := sb.Forward(ctx, int(d.Port))
	if err != nil {
		nc.Reject(ssh.ConnectionFailed, err.Error())
		return
	}
	defer conn.Close()
	ch, reqs, err := nc.Accept()
	if err != nil {
		return
	}
	defer ch.Close()
	go ssh.DiscardRequests(reqs)
	go func() {
		io.Copy(conn, ch)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}()
	// Until the sandbox's side ends: the client may half-close first (a request sent,
	// its answer still to come).
	io.Copy(ch, conn)
	ch.CloseWrite()
}
