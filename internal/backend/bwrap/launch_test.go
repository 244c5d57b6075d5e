package bwrap_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/bwrap"
	"github.com/paddockhq/paddock/internal/guestclient"
)

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// startSandbox creates and starts a sandbox and connects to its guest.
func startSandbox(t *testing.T, b *bwrap.Bwrap, spec backend.Spec) *guestclient.Client {
	t.Helper()
	ctx := context.Background()
	if err := b.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), spec.ID) })
	if err := b.Start(ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	c, err := guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) { return b.Dial(ctx, spec.ID) }, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func run(t *testing.T, c *guestclient.Client, script string) (int, string) {
	t.Helper()
	var out strings.Builder
	code, err := c.Exec(context.Background(), guestclient.ExecOptions{Argv: []string{"sh", "-c", script}, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	return code, out.String()
}

// TestNoSecretOnCommandLine checks that the sandbox's environment, which holds its
// placeholder key, reaches the sandbox without appearing on any command line of the
// host (readable by every user there, through ps), and that the descriptors that carried
// bwrap's options and filter are not left open in the sandbox.
func TestNoSecretOnCommandLine(t *testing.T) {
	b, agent := newBackend(t)
	token := "paddock-placeholder-" + randomHex(t, 16)
	id := backend.ID("argsfd1")
	c := startSandbox(t, b, backend.Spec{ID: id, Name: "argsfd", GuestBinary: agent.Path, GuestSHA256: agent.SHA256,
		Env: []string{"ANTHROPIC_API_KEY=" + token}})

	if code, out := run(t, c, "printenv ANTHROPIC_API_KEY"); code != 0 || strings.TrimSpace(out) != token {
		t.Fatalf("the sandbox's environment: exit %d, %q; want the placeholder", code, out)
	}
	pid, ok := b.BwrapPID(id)
	if !ok {
		t.Fatal("no bwrap process recorded for the running sandbox")
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cmdline), "agent\x00serve") {
		t.Fatalf("pid %d is not the sandbox's bwrap: %q", pid, cmdline)
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), token) {
			t.Errorf("the placeholder is on the command line of pid %s: %q", e.Name(), strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if !strings.Contains(string(environ), "PADDOCK_SANDBOX_ID="+string(id)+"\x00") {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", e.Name(), "fd"))
		for _, fd := range fds {
			if target, _ := os.Readlink(filepath.Join("/proc", e.Name(), "fd", fd.Name())); strings.Contains(target, "memfd:bwrap-") {
				t.Errorf("pid %s of the sandbox (%q) holds %s open as fd %s", e.Name(), strings.ReplaceAll(string(cmdline), "\x00", " "), target, fd.Name())
			}
		}
	}
}

// TestConfigMasked checks that paddock's configuration, given to the backend to hide,
// cannot be read in a sandbox although it lies in the host's /etc, which sandboxes see:
// a directory shows empty, and a file does not open. The files are readable by everyone on the host,
// so the mask is all that keeps them out; a file beside them shows that /etc is there.
func TestConfigMasked(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("writes beneath /etc: run as root")
	}
	base := "/etc/paddock-test-" + randomHex(t, 4)
	key := "sk-ant-api03-fake-" + randomHex(t, 16)
	dir, file, beside := base, base+".toml", base+"-beside"
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, f := range []string{filepath.Join(dir, "config.toml"), file, beside} {
		if err := os.WriteFile(f, []byte("[providers.anthropic]\napi_key = \""+key+"\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(f) })
	}
	// The directory is named through a symlink, as a config path may be.
	link := base + "-link"
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(link) })

	b, agent := newBackendHiding(t, []string{link, file})
	c := startSandbox(t, b, backend.Spec{ID: "masked1", Name: "masked", GuestBinary: agent.Path, GuestSHA256: agent.SHA256})

	if code, out := run(t, c, "cat "+beside); code != 0 || !strings.Contains(out, key) {
		t.Fatalf("the file beside the hidden ones is not readable, so /etc is not shown and this test proves nothing: exit %d, %q", code, out)
	}
	if _, out := run(t, c, "ls -A "+dir); out != "" {
		t.Errorf("the hidden directory lists %q in the sandbox", out)
	}
	if _, out := run(t, c, "cat "+dir+"/config.toml "+file+" 2>/dev/null"); strings.Contains(out, key) {
		t.Errorf("paddock's configuration is readable in the sandbox: %q", out)
	}
	if _, out := run(t, c, "grep -rl "+key+" /etc 2>/dev/null"); strings.TrimSpace(out) != beside {
		t.Errorf("the key is found in the sandbox's /etc in %q, want only the file beside the hidden ones", out)
	}
}
