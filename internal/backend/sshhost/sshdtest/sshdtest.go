// Package sshdtest runs Debian's OpenSSH server for tests, as the "remote" host of the
// ssh backend: its own sshd_config, host key and user key, in a network namespace of
// its own (so its loopback is not the test's), reached through a forwarder on the
// test's 127.0.0.1 at a random port that can cut every connection, as a network would.
package sshdtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/backend/sshhost"
	"github.com/paddockhq/paddock/internal/testenv"
)

// SSHD is where Debian's openssh-server puts the server.
const SSHD = "/usr/sbin/sshd"

// Server is a running sshd.
type Server struct {
	// Addr is the forwarder's address on the test's loopback.
	Addr string
	// KeyFile is the user key's private half, whose public half sshd authorizes.
	KeyFile string
	// Signer is the same key.
	Signer ssh.Signer
	// Home is paddock's directory on the "remote" side (separate from any of the test's).
	Home string
	// Log is sshd's log file (LogLevel DEBUG3: every request a client makes).
	Log string

	dir     string
	cmd     *exec.Cmd
	hostKey ssh.Signer
	ln      net.Listener

	mu    sync.Mutex
	conns map[net.Conn]bool
}

// TB is what Run needs of a test: testing.TB has it, and a script's command can too.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Missing says what this machine lacks to run sshd for a test, and how to get it; empty
// when nothing.
func Missing() (what, fix string) {
	if _, err := os.Stat(SSHD); err != nil {
		return "sshd is not installed", "apt-get install openssh-server"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "ip is not installed", "apt-get install iproute2"
	}
	if os.Geteuid() != 0 {
		return "the ssh backend's tests run sshd in a network namespace of its own, which takes root", "run the tests as root (make test does)"
	}
	return "", ""
}

// Start runs sshd, skipping (failing under CI) where it cannot run. It runs as root: it
// is the root of the network namespace it makes, and logs in as root.
func Start(t testing.TB) *Server {
	t.Helper()
	if what, fix := Missing(); what != "" {
		testenv.Missing(t, what, fix)
	}
	return Run(t)
}

// Run runs sshd; the caller has checked Missing.
func Run(t TB) *Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "pdks")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Sandboxes made as root run as an unprivileged uid that must reach their directories.
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatalf("%v", err)
	}
	s := &Server{dir: dir, Home: filepath.Join(dir, "remote"), Log: filepath.Join(dir, "sshd.log"), conns: map[net.Conn]bool{}}
	s.hostKey = writeKey(t, filepath.Join(dir, "host_key"))
	s.Signer = writeKey(t, filepath.Join(dir, "user_key"))
	s.KeyFile = filepath.Join(dir, "user_key")
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(s.Signer.PublicKey()), 0o600); err != nil {
		t.Fatalf("%v", err)
	}
	conf := strings.Join([]string{
		"Port 22", "ListenAddress 127.0.0.1",
		"HostKey " + filepath.Join(dir, "host_key"),
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"PubkeyAuthentication yes", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password", "UsePAM no", "StrictModes no",
		// Granted if asked, so that a request would show in the log; paddock never asks.
		"AllowAgentForwarding yes",
		"LogLevel DEBUG3",
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(conf), 0o600); err != nil {
		t.Fatalf("%v", err)
	}
	// sshd refuses to start without its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	s.cmd = exec.Command("sh", "-c", `ip link set lo up && exec "$0" -D -f "$1" -E "$2"`, SSHD, filepath.Join(dir, "sshd_config"), s.Log)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	var stderr strings.Builder
	s.cmd.Stderr = &stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	s.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { s.ln.Close(); s.Drop() })
	s.Addr = s.ln.Addr().String()
	go s.forward()
	s.waitReady(t, &stderr)
	return s
}

// writeKey makes an ed25519 key in OpenSSH's format at path.
func writeKey(t TB, path string) ssh.Signer {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("%v", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatalf("%v", err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatalf("%v", err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return s
}

// HostKey is the key sshd offers now.
func (s *Server) HostKey() ssh.PublicKey { return s.hostKey.PublicKey() }

// Host is the server as `paddock host add` would record it: root, the user key, the
// host key pinned, paddock's directory in Home.
func (s *Server) Host() sshhost.Host {
	return sshhost.Host{User: "root", Addr: s.Addr, Identity: s.KeyFile, HostKey: string(ssh.MarshalAuthorizedKey(s.HostKey())), Home: s.Home}
}

// URL is the server's ssh:// address.
func (s *Server) URL() string { return "ssh://root@" + s.Addr }

// NewHostKey gives sshd another host key, as a reinstalled host (or a machine in the
// way) would offer, and waits until the restarted sshd listens and offers it.
//
// A connection sshd accepted before it took the signal is served by a child that reads
// the new key from disk, so seeing the key is not enough: the old listener then closes,
// resetting what waits in its queue. The restart is seen in the log, as a second
// "Server listening".
func (s *Server) NewHostKey(t TB) {
	t.Helper()
	starts := s.listening()
	s.hostKey = writeKey(t, filepath.Join(s.dir, "host_key"))
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil { // sshd starts itself again, reading its keys
		t.Fatalf("%v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for s.listening() == starts {
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not start again after SIGHUP")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		var got ssh.PublicKey
		conf := &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(s.Signer)}, Timeout: 5 * time.Second,
			HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error { got = k; return nil }}
		if c, err := ssh.Dial("tcp", s.Addr, conf); err == nil {
			c.Close()
		}
		if got != nil && string(got.Marshal()) == string(s.HostKey().Marshal()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not take its new host key")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// listening is how many times sshd has said in its log that it listens.
func (s *Server) listening() int {
	log, _ := os.ReadFile(s.Log)
	return bytes.Count(log, []byte("Server listening on "))
}

// Drop cuts every connection through the forwarder, as a network that went away would;
// new connections go through.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
		delete(s.conns, c)
	}
}

// Connections is how many connections go through the forwarder now.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns) / 2
}

func (s *Server) waitReady(t TB, stderr *strings.Builder) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, 2*time.Second)
		if err == nil {
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			buf := make([]byte, 4)
			_, err = io.ReadFull(c, buf)
			c.Close()
			if err == nil && string(buf) == "SSH-" {
				return
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(s.Log)
			t.Fatalf("sshd did not answer: %v\n%s\n%s", err, stderr.String(), log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// forward joins each connection to the test's listener to sshd inside its namespace.
func (s *Server) forward() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			in, err := s.dialInside()
			if err != nil {
				c.Close()
				return
			}
			s.mu.Lock()
			s.conns[c], s.conns[in] = true, true
			s.mu.Unlock()
			done := make(chan struct{}, 2)
			go func() { io.Copy(in, c); done <- struct{}{} }()
			go func() { io.Copy(c, in); done <- struct{}{} }()
			<-done
			c.Close()
			in.Close()
			s.mu.Lock()
			delete(s.conns, c)
			delete(s.conns, in)
			s.mu.Unlock()
		}()
	}
}

// dialInside connects to sshd's 127.0.0.1:22 from a thread that entered its network
// namespace; the socket stays there, the thread ends with its goroutine.
func (s *Server) dialInside() (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is in another namespace, and ends with this goroutine
		fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/net", s.cmd.Process.Pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			ch <- result{err: err}
			return
		}
		c, err := net.DialTimeout("tcp", "127.0.0.1:22", 5*time.Second)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}
