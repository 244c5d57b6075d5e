package cli_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/clitest"
)

// BenchmarkCLIExec measures what a user waits for: `paddock exec NAME -- true` through
// the daemon's API and the guest (the CLI runs in-process, the daemon is real),
// against fork+exec of `true` on the host, in the same run.
func BenchmarkCLIExec(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	home, err := os.MkdirTemp("", "pdk")
	if err != nil {
		b.Fatal(err)
	}
	os.Chmod(home, 0o711)
	b.Setenv("PADDOCK_HOME", home)
	defer clitest.Teardown(home, nil, "")
	repo := filepath.Join(home, "benchrepo")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	ctx := context.Background()
	var errOut strings.Builder
	f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut})
	f.Executable = func() (string, error) { return os.Executable() }
	if code := cli.Run(ctx, f, []string{"up", repo}); code != 0 {
		b.Fatalf("up: %d %s", code, errOut.String())
	}
	b.ResetTimer()
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if code := cli.Run(ctx, f, []string{"exec", "benchrepo", "--", "true"}); code != 0 {
			b.Fatalf("exec: %d %s", code, errOut.String())
		}
		ours += time.Since(start)
		start = time.Now()
		exec.Command("true").Run()
		base += time.Since(start)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "baseline-ns/op")
	b.ReportMetric(float64(ours)/float64(base), "x-baseline")
}

// contextHome is a benchmark's home with a bwrap sandbox "repo" and a context "tls"
// reaching the same daemon over HTTPS on the loopback (a self-signed certificate, a
// token), and a paddock run in-process that fails b on a non-zero exit.
func contextHome(b *testing.B) (run func(args ...string) string) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	home, repo := benchHome(b)
	b.Setenv("PADDOCK_CONTEXT", "")
	run = func(args ...string) string {
		var out, errOut strings.Builder
		f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		if code := cli.Run(context.Background(), f, args); code != 0 {
			b.Fatalf("paddock %v: %d %s", args, code, errOut.String())
		}
		return out.String()
	}
	run("up", repo)
	cert, key := filepath.Join(home, "cert.pem"), filepath.Join(home, "key.pem")
	if err := writeSelfSigned(cert, key); err != nil {
		b.Fatal(err)
	}
	web := run("web", "--listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key)
	url := regexp.MustCompile(`https://127\.0\.0\.1:[0-9]+`).FindString(web)
	token := filepath.Join(home, "token")
	os.WriteFile(token, []byte(run("token", "create", "--name", "bench")), 0o600)
	run("context", "add", "tls", url, "--token-file", token, "--ca-file", cert)
	return run
}

// BenchmarkContextExec: `paddock exec NAME -- true` through a context, the daemon's API
// over HTTPS on the loopback with a token, against the same command on the unix socket,
// in the same run, alternating.
func BenchmarkContextExec(b *testing.B) {
	run := contextHome(b)
	b.ResetTimer()
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		run("--context", "tls", "exec", "repo", "--", "true")
		ours += time.Since(start)
		start = time.Now()
		run("exec", "repo", "--", "true")
		base += time.Since(start)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N)/1e6, "ms/exec")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N)/1e6, "unix-socket-ms/exec")
	b.ReportMetric(float64(ours)/float64(base), "x-baseline")
}

// BenchmarkContextAttach: attaching to a session (what `paddock chat` runs) through a
// context, HTTPS on the loopback, until its screen shows, against the same on the unix
// socket, in the same run, alternating.
func BenchmarkContextAttach(b *testing.B) {
	run := contextHome(b)
	const screen = "READY-SCREEN-0123"
	run("chat", "repo", "--new", "s", "--agent", "shell", "--command", "echo "+screen+"; sleep 100000")
	b.ResetTimer()
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		ours += attachTime(b, screen, "--context", "tls")
		base += attachTime(b, screen)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N)/1e6, "ms/attach")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N)/1e6, "unix-socket-ms/attach")
	b.ReportMetric(float64(ours)/float64(base), "x-baseline")
}

// attachTime runs `paddock [ARGS] exec -t repo -- tmux attach -t =s` (what `paddock
// chat` runs) and returns how long until screen shows on its terminal; it then detaches.
func attachTime(b *testing.B, screen string, args ...string) time.Duration {
	w := &signalWriter{marker: screen, ready: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	f := cli.NewFactory(cli.IOStreams{In: inR, Out: w, ErrOut: io.Discard})
	start := time.Now()
	done := make(chan struct{})
	go func() {
		cli.Run(ctx, f, append(args, "exec", "-t", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "attach", "-t", "=s"))
		close(done)
	}()
	select {
	case <-w.ready:
	case <-time.After(20 * time.Second):
		b.Fatalf("no screen: %q", w.buf.String())
	}
	took := time.Since(start)
	cancel()
	inW.Close()
	<-done
	return took
}

// BenchmarkContextSync: `paddock sync` of one new commit through a context (the daemon's
// API over HTTPS on the loopback, into the laptop's clone), against `git fetch` of one
// new commit over SSH from the same host (OpenSSH's sshd on the loopback, run here), in
// the same run, alternating.
func BenchmarkContextSync(b *testing.B) {
	sshURL := sshRepo(b)
	run := contextHome(b)
	home := os.Getenv("PADDOCK_HOME")
	b.Chdir(filepath.Join(home, "repo"))
	fetchInto := filepath.Join(b.TempDir(), "fetcher")
	gitOK(b, "", "clone", "-q", sshURL.url, fetchInto)
	b.ResetTimer()
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		run("exec", "repo", "--", "sh", "-c", fmt.Sprintf("echo %d > f && git add f && git commit -qm 'agent %d'", i, i))
		sshURL.commit(b, i)
		b.StartTimer()

		start := time.Now()
		run("--context", "tls", "sync", "repo")
		ours += time.Since(start)

		start = time.Now()
		gitOK(b, fetchInto, "fetch", "-q", "origin")
		base += time.Since(start)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N)/1e6, "ms/sync")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N)/1e6, "ssh-fetch-ms/commit")
	b.ReportMetric(float64(ours)/float64(base), "x-baseline")
}

// sshServed is a bare repository served by a throwaway sshd on the loopback.
type sshServed struct {
	url, work string
}

// commit adds commit i to the served repository, from a work tree beside it.
func (s sshServed) commit(b *testing.B, i int) {
	os.WriteFile(filepath.Join(s.work, "f"), []byte(fmt.Sprint(i)), 0o644)
	gitOK(b, s.work, "add", "f")
	gitOK(b, s.work, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qm", fmt.Sprint("ssh ", i))
	gitOK(b, s.work, "push", "-q", "origin", "main")
}

// sshRepo starts OpenSSH's sshd on a free loopback port with a throwaway host key and a
// client key of its own, serving a bare repository, and points git's ssh at it.
func sshRepo(b *testing.B) sshServed {
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if _, err = os.Stat("/usr/sbin/sshd"); err != nil {
			b.Skip("sshd is not installed (apt-get install openssh-server)")
		}
		sshd = "/usr/sbin/sshd"
	}
	dir := b.TempDir()
	for _, k := range []string{"host", "client"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			b.Fatalf("ssh-keygen: %v %s", err, out)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(dir, "client.pub"))
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := filepath.Join(dir, "sshd_config")
	os.WriteFile(conf, []byte(fmt.Sprintf(`ListenAddress 127.0.0.1:%d
HostKey %s/host
AuthorizedKeysFile %s/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PidFile none
`, port, dir, dir)), 0o600)
	os.MkdirAll("/run/sshd", 0o755)
	cmd := exec.Command(sshd, "-D", "-e", "-f", conf)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	b.Setenv("GIT_SSH_COMMAND", fmt.Sprintf("ssh -i %s/client -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes", dir))
	bare := filepath.Join(dir, "served.git")
	gitOK(b, "", "init", "-q", "--bare", "-b", "main", bare)
	s := sshServed{url: fmt.Sprintf("ssh://%s@127.0.0.1:%d%s", currentUser(), port, bare), work: filepath.Join(dir, "work")}
	gitOK(b, "", "clone", "-q", bare, s.work)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("sshd did not listen")
		}
	}
	s.commit(b, -1)
	return s
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "root"
}

// gitOK runs git in dir ("" for the current directory) and fails b when it fails.
func gitOK(b *testing.B, dir string, args ...string) {
	b.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v %s", args, err, out)
	}
}
