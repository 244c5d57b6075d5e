package sshhost_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/bwrap"
	"github.com/paddockhq/paddock/internal/backend/sshhost"
	"github.com/paddockhq/paddock/internal/backend/sshhost/sshdtest"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/servecmd"
)

// TestMain lets this test binary be paddock: the backend copies the running binary to
// the host as ~/.paddock/bin/paddock, where that name makes it the CLI (`backend serve`),
// and into sandboxes as the guest.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "paddock" {
		os.Exit(servecmd.Main())
	}
	os.Exit(m.Run())
}

// fixture is an ssh backend with one host, h1: the test's sshd.
type fixture struct {
	b     *sshhost.SSH
	srv   *sshdtest.Server
	agent sandbox.GuestBinary
	dir   string // the backend's directory
	cfg   string // the config directory holding hosts.json
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	srv := sshdtest.Start(t)
	fx := &fixture{srv: srv, dir: t.TempDir(), cfg: t.TempDir()}
	hf := sshhost.HostsFile{Hosts: map[string]sshhost.Host{"h1": srv.Host()}}
	if err := hf.Save(fx.cfg); err != nil {
		t.Fatal(err)
	}
	b, err := sshhost.New(backend.Env{Dir: fx.dir, ConfigDir: fx.cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	fx.b = b
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if fx.agent, err = sandbox.InstallGuest(self, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	return fx
}

func (fx *fixture) spec(id backend.ID) backend.Spec {
	return backend.Spec{ID: id, Name: "ssh-" + string(id), GuestBinary: fx.agent.Path, GuestSHA256: fx.agent.SHA256,
		Placement: map[string]string{sshhost.PlaceHost: "h1"}}
}

// remote is the host's own bwrap backend, on its directory: the host is this machine,
// so what a sandbox left there can be looked at from here.
func (fx *fixture) remote(t testing.TB) *bwrap.Bwrap {
	rb, err := bwrap.New(backend.Env{Dir: filepath.Join(fx.srv.Home, "sandboxes", "bwrap")})
	if err != nil {
		t.Fatal(err)
	}
	return rb
}

func TestConformance(t *testing.T) { // serial: the suite's environment check sets a variable in this process
	fx := newFixture(t)
	rb := fx.remote(t)
	// What the checks expect is the host's backend's (bwrap's there), asked of the host,
	// as `paddock verify` asks it.
	expect := backend.ExpectOf(context.Background(), fx.b, "")
	backendtest.Run(t, backendtest.Harness{
		Backend: fx.b,
		Spec:    fx.spec,
		Leftovers: func(id backend.ID) []string {
			out := rb.Leftovers(id)
			if _, err := os.Stat(filepath.Join(fx.dir, string(id)+".json")); err == nil {
				out = append(out, "the record of which host it was on")
			}
			// What verify looks at says the same.
			if got := fx.b.Leftovers(id); len(got) != len(out) {
				t.Errorf("the backend's Leftovers(%s) say %q; on the host: %q", id, got, out)
			}
			return out
		},
		HostSecrets:      []string{filepath.Join(fx.srv.Home, "state-secret"), filepath.Join(fx.cfg, "secret")},
		Dir:              fx.dir,
		PidsLimit:        expect.PidsLimit,
		Allows:           expect.Allows,
		LimitsEndSandbox: expect.LimitsEndSandbox,
		Machine:          expect.Machine,
	})
}

// run starts a sandbox on h1 and returns a client of its guest.
func (fx *fixture) run(t testing.TB, id backend.ID) *guestclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := fx.b.Create(ctx, fx.spec(id)); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { fx.b.Destroy(context.Background(), id) })
	if err := fx.b.Start(ctx, id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return fx.connect(t, id)
}

func (fx *fixture) connect(t testing.TB, id backend.ID) *guestclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) { return fx.b.Dial(ctx, id) }, "test")
	if err != nil {
		t.Fatalf("connect to the guest: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func sh(t *testing.T, c *guestclient.Client, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", script}, Stdout: &out, Stderr: &out})
	if err != nil || code != 0 {
		t.Fatalf("%q: exit %d, %v: %s", script, code, err, out.String())
	}
	return strings.TrimSpace(out.String())
}

// TestReconnect: the network drops every connection to the host; the sandbox runs on
// there, and the next call connects again (one new SSH connection) and reaches it, with
// the files and processes it had.
func TestReconnect(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	c := fx.run(t, "recon1")
	sh(t, c, "echo kept > /workspace/f; (sleep 600 >/dev/null 2>&1 &) ; true")
	before := sh(t, c, "pgrep -c sleep")
	fx.srv.Drop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}); err == nil {
		t.Fatal("a guest connection outlived the SSH connection it went through")
	}
	st, err := fx.b.State(ctx, "recon1")
	if err != nil || st.State != backend.StateRunning {
		t.Fatalf("State after the drop = %+v, %v; want running", st, err)
	}
	c2 := fx.connect(t, "recon1")
	if got := sh(t, c2, "cat /workspace/f; pgrep -c sleep"); got != "kept\n"+before {
		t.Fatalf("after reconnecting the sandbox has %q, want %q", got, "kept\n"+before)
	}
	if n := fx.srv.Connections(); n != 1 {
		t.Fatalf("%d SSH connections to the host after reconnecting, want 1: every call and stream shares one", n)
	}
}

// TestHostKeyChanged: a host offering another key than the one pinned is refused, and
// the error shows the key's fingerprint and what to run.
func TestHostKeyChanged(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.srv.NewHostKey(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := fx.b.Create(ctx, fx.spec("hostkey1"))
	var hk *sshhost.HostKeyError
	if !errors.As(err, &hk) {
		t.Fatalf("Create against a changed host key: %v, want a HostKeyError", err)
	}
	for _, want := range []string{sshFingerprint(fx.srv), "paddock host rm h1 && paddock host add h1 " + fx.srv.URL()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if _, err := os.Stat(filepath.Join(fx.srv.Home, "bin", "paddock")); err == nil {
		t.Fatal("paddock was copied to a host whose key was refused")
	}
	if st, err := fx.b.State(ctx, "hostkey1"); err != nil || st.State != backend.StateMissing {
		t.Fatalf("State of a sandbox refused at Create = %+v, %v; want missing", st, err)
	}
}

// TestSandboxCannotReplaceHostPaddock: the paddock binary on the host runs as the host's
// user at each connection, so a sandbox that could write it would run code outside
// itself. An agent inside looks for it and for the host's paddock directory by every
// path it might know, and tries to write there; the binary is the same after.
func TestSandboxCannotReplaceHostPaddock(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	c := fx.run(t, "escape1")
	bin := filepath.Join(fx.srv.Home, "bin", "paddock")
	before := sumFile(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	script := `for p in "$1" "$2" /proc/1/root"$1" /proc/1/cwd/bin/paddock; do
  if [ -e "$p" ]; then echo "sees $p"; fi
  (echo pwned > "$p") 2>/dev/null && echo "wrote $p"
done
for pid in $(ls /proc | grep '^[0-9]'); do
  case "$(readlink /proc/$pid/exe 2>/dev/null)" in *"$2"*) echo "sees the host's process $pid";; esac
done
true`
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", script, "sh", bin, fx.srv.Home}, Stdout: &out, Stderr: &out})
	if err != nil || code != 0 {
		t.Fatalf("exec: %d %v %s", code, err, out.String())
	}
	if got := strings.TrimSpace(out.String()); got != "" {
		t.Fatalf("a sandbox on the host reached paddock's files there:\n%s", got)
	}
	if after := sumFile(t, bin); after != before {
		t.Fatal("the host's paddock binary changed while a sandbox ran")
	}
	// And the next connection still runs the host's paddock, unchanged.
	fx.srv.Drop()
	if got := sh(t, fx.connect(t, "escape1"), "echo back"); got != "back" {
		t.Fatalf("after reconnecting: %q", got)
	}
}

func sumFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sshFingerprintOf(data)
}
