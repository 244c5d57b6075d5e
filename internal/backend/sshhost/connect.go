package sshhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// HostKeyError says a host offered another key than the one pinned for it.
type HostKeyError struct {
	Name, Addr, URL  string
	Offered, Pinned  string // SHA256 fingerprints
	OfferedAlgorithm string
}

func (e *HostKeyError) Error() string {
	return fmt.Sprintf("host %s (%s) offered the %s host key %s, not the one pinned by `paddock host add` (%s): the host was "+
		"reinstalled, or something is in the way. Check the key on the host (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub), "+
		"then, if you trust it: paddock host rm %s && paddock host add %s %s",
		e.Name, e.Addr, e.OfferedAlgorithm, e.Offered, e.Pinned, e.Name, e.Name, e.URL)
}

// pinned accepts only the host's pinned key.
func pinned(name string, h Host) ssh.HostKeyCallback {
	return func(_ string, _ net.Addr, key ssh.PublicKey) error {
		want, err := h.PublicKey()
		if err != nil {
			return err
		}
		if !bytes.Equal(want.Marshal(), key.Marshal()) {
			return &HostKeyError{Name: name, Addr: h.Addr, URL: h.URL(), Offered: ssh.FingerprintSHA256(key),
				Pinned: ssh.FingerprintSHA256(want), OfferedAlgorithm: key.Type()}
		}
		return nil
	}
}

// defaultKeys are the key files tried when a host names none, as OpenSSH's client does.
var defaultKeys = []string{"id_ed25519", "id_ecdsa", "id_rsa"}

// auth is how paddock logs in to a host: the host's identity file, or else the user's
// default key files; and the keys of the laptop's ssh-agent, if one runs. tried names
// them for an error; close lets go of the agent. getenv, when set, reads SSH_AUTH_SOCK
// and HOME in place of this process's environment.
func auth(h Host, getenv func(string) string) (methods []ssh.AuthMethod, tried []string, close func()) {
	close = func() {}
	home, homeErr := os.UserHomeDir()
	if getenv == nil {
		getenv = os.Getenv
	} else if home, homeErr = getenv("HOME"), nil; home == "" {
		homeErr = errors.New("$HOME is not defined")
	}
	var files []string
	if h.Identity != "" {
		files = []string{h.Identity}
	} else if homeErr == nil {
		for _, k := range defaultKeys {
			files = append(files, filepath.Join(home, ".ssh", k))
		}
	}
	var signers []ssh.Signer
	for _, path := range files {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) && h.Identity == "" {
			continue
		}
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s (%v)", path, err))
			continue
		}
		s, err := ssh.ParsePrivateKey(data)
		var pp *ssh.PassphraseMissingError
		if errors.As(err, &pp) {
			tried = append(tried, path+" (encrypted: add it to ssh-agent with ssh-add)")
			continue
		}
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s (%v)", path, err))
			continue
		}
		signers = append(signers, s)
		tried = append(tried, path)
	}
	if len(signers) > 0 {
		methods = append(methods, ssh.PublicKeys(signers...))
	}
	if sock := getenv("SSH_AUTH_SOCK"); sock != "" {
		if conn, err := net.DialTimeout("unix", sock, 5*time.Second); err == nil {
			ag := agent.NewClient(conn)
			if keys, err := ag.List(); err == nil && len(keys) > 0 {
				// The agent signs the login here; it is never forwarded to the host.
				methods = append(methods, ssh.PublicKeysCallback(ag.Signers))
				tried = append(tried, fmt.Sprintf("ssh-agent (%d keys)", len(keys)))
			}
			close = func() { conn.Close() }
		}
	}
	return methods, tried, close
}

// dialSSH logs in to a host, checking its key with check; getenv is as auth's.
func dialSSH(ctx context.Context, name string, h Host, check ssh.HostKeyCallback, getenv func(string) string) (*ssh.Client, error) {
	methods, tried, closeAgent := auth(h, getenv)
	defer closeAgent()
	if len(methods) == 0 {
		return nil, fmt.Errorf("no key to log in to host %s with: give one with `paddock host add %s %s --identity FILE`, or add it to ssh-agent (tried: %s)",
			name, name, h.URL(), orNothing(tried))
	}
	conf := &ssh.ClientConfig{User: h.User, Auth: methods, HostKeyCallback: check, Timeout: 20 * time.Second}
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	raw, err := d.DialContext(dctx, "tcp", h.Addr)
	if err != nil {
		return nil, fmt.Errorf("cannot reach host %s at %s: %w", name, h.Addr, err)
	}
	stop := context.AfterFunc(dctx, func() { raw.Close() })
	sc, chans, reqs, err := ssh.NewClientConn(raw, h.Addr, conf)
	stop()
	if err != nil {
		raw.Close()
		var hk *HostKeyError
		if errors.As(err, &hk) {
			return nil, hk
		}
		if strings.Contains(err.Error(), "unable to authenticate") {
			return nil, fmt.Errorf("host %s refused to let %s log in with any of: %s. Add one of their public keys to %s's ~/.ssh/authorized_keys there, or name another key: paddock host rm %s && paddock host add %s %s --identity FILE",
				name, h.User, strings.Join(tried, ", "), h.User, name, name, h.URL())
		}
		return nil, fmt.Errorf("SSH to host %s at %s: %w", name, h.Addr, err)
	}
	return ssh.NewClient(sc, chans, reqs), nil
}

func orNothing(s []string) string {
	if len(s) == 0 {
		return "no key files, no ssh-agent"
	}
	return strings.Join(s, ", ")
}

// Scan logs in to a host whose key is not pinned yet, as `host add` does, and returns the
// key it offered: the key to pin. want, when set, is the fingerprint the key must have.
func Scan(ctx context.Context, name string, h Host, want string) (ssh.PublicKey, error) {
	var offered ssh.PublicKey
	client, err := dialSSH(ctx, name, h, func(_ string, _ net.Addr, key ssh.PublicKey) error {
		offered = key
		if want != "" && ssh.FingerprintSHA256(key) != want {
			return fmt.Errorf("host %s offered the host key %s, not %s", name, ssh.FingerprintSHA256(key), want)
		}
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	client.Close()
	return offered, nil
}
