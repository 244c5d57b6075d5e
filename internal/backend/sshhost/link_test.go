package sshhost_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/paddockhq/paddock/internal/backend/sshhost"
	"github.com/paddockhq/paddock/internal/backend/sshhost/sshdtest"
)

func sshFingerprint(srv *sshdtest.Server) string { return ssh.FingerprintSHA256(srv.HostKey()) }

// open opens a link to the host h of srv; getenv, when set, is the environment Open
// reads (SSH_AUTH_SOCK, HOME), else this process's.
func open(t *testing.T, srv *sshdtest.Server, h sshhost.Host, getenv func(string) string) *sshhost.Link {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := sshhost.Open(ctx, "h1", h, sshhost.OpenOptions{Binary: self, Getenv: getenv})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	l.Close()
	return l
}

// TestCopy: paddock is copied to a host that lacks it, copied again over another build,
// and left alone when the host has this one.
func TestCopy(t *testing.T) {
	t.Parallel()
	srv := sshdtest.Start(t)
	self, _ := os.Executable()
	remote := filepath.Join(srv.Home, "bin", "paddock")
	want := sum(t, self)

	if l := open(t, srv, srv.Host(), nil); !l.Copied || sum(t, remote) != want || l.Backend != "bwrap" {
		t.Fatalf("missing: copied %v, the host's paddock %s (want %s), backend %q", l.Copied, sum(t, remote), want, l.Backend)
	}
	fi, _ := os.Stat(remote)
	if l := open(t, srv, srv.Host(), nil); l.Copied {
		t.Fatal("current: paddock was copied again to a host that has this build")
	}
	if fi2, _ := os.Stat(remote); !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatal("current: the host's paddock was written again")
	}
	if err := os.WriteFile(remote, []byte("#!/bin/sh\necho an older paddock\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if l := open(t, srv, srv.Host(), nil); !l.Copied || sum(t, remote) != want {
		t.Fatalf("outdated: copied %v, the host's paddock %s, want %s", l.Copied, sum(t, remote), want)
	}
}

func sum(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return sshFingerprintOf(data)
}

// TestNoAgentForwarding: paddock logs in with a key held by the laptop's ssh-agent, and
// never asks the host to forward the agent; sshd's log, which records such a request
// (checked by making one), has none from paddock.
func TestNoAgentForwarding(t *testing.T) {
	t.Parallel()
	srv := sshdtest.Start(t)
	sock := serveAgent(t, srv)
	env := map[string]string{"SSH_AUTH_SOCK": sock, "HOME": t.TempDir()} // no key files: the agent's key or nothing
	h := srv.Host()
	h.Identity = ""
	l := open(t, srv, h, func(k string) string { return env[k] })
	if l.Backend == "" {
		t.Fatal("no backend answered")
	}
	if log := readLog(t, srv); strings.Contains(log, "auth-agent-req") {
		t.Fatalf("paddock asked the host to forward the agent:\n%s", grep(log, "auth-agent-req"))
	}
	if !strings.Contains(readLog(t, srv), "Accepted publickey for root") {
		t.Fatal("sshd's log has no login by the agent's key")
	}

	// The control: a client that asks for forwarding shows in the log.
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client, err := ssh.Dial("tcp", srv.Addr, &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeysCallback(agent.NewClient(conn).Signers)},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey())})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.RequestAgentForwarding(s); err != nil {
		t.Fatal(err)
	}
	s.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(readLog(t, srv), "auth-agent-req") {
		if time.Now().After(deadline) {
			t.Fatal("sshd's log does not show a forwarding request even when one is made: the check above proves nothing")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAuthFailure: a key the host does not authorize is refused, and the error names the
// keys tried and what to do.
func TestAuthFailure(t *testing.T) {
	t.Parallel()
	srv := sshdtest.Start(t)
	h := srv.Host()
	other := filepath.Join(t.TempDir(), "other_key")
	otherKey(t, other)
	h.Identity = other
	self, _ := os.Executable()
	noAgent := func(string) string { return "" } // no ssh-agent; the identity file needs no HOME
	_, err := sshhost.Open(context.Background(), "h1", h, sshhost.OpenOptions{Binary: self, Getenv: noAgent})
	if err == nil {
		t.Fatal("a key the host does not authorize logged in")
	}
	for _, want := range []string{other, "authorized_keys", "--identity"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

func readLog(t *testing.T, srv *sshdtest.Server) string {
	data, err := os.ReadFile(srv.Log)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func grep(s, what string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, what) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func sshFingerprintOf(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// serveAgent runs an ssh-agent holding the server's user key, and returns its socket.
func serveAgent(t *testing.T, srv *sshdtest.Server) string {
	t.Helper()
	data, err := os.ReadFile(srv.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.ParseRawPrivateKey(data)
	if err != nil {
		t.Fatal(err)
	}
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: key}); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pdka")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { agent.ServeAgent(keyring, c); c.Close() }()
		}
	}()
	return sock
}

// otherKey writes a key no host authorizes.
func otherKey(t *testing.T, path string) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
}
