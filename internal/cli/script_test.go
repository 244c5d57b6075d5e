package cli_test

import (
	"context"
	"debug/elf"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"golang.org/x/crypto/ssh"

	"github.com/paddockhq/paddock/internal/backend/sshhost/sshdtest"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/clitest"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/servecmd"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestMain makes this test binary the paddock command for the scripts: as "paddock" on
// PATH, as the daemon it starts, and as the guest it injects into sandboxes.
func TestMain(m *testing.M) {
	main := func() { os.Exit(servecmd.Main()) }
	testscript.Main(m, map[string]func(){"paddock": main, cli.RemoteHelperName: main})
}

// TestScripts runs testdata/script/*.txtar: every command line a user types, against a
// real daemon and real bubblewrap sandboxes, one isolated PADDOCK_HOME per script.
func TestScripts(t *testing.T) {
	t.Parallel()
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup:               setup,
		Condition:           condition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"killdaemon":   killDaemon,
			"waitfor":      waitFor,
			"upstream":     startUpstream,
			"webenv":       webEnv,
			"webreq":       webReq,
			"selfsigned":   selfSigned,
			"webhook":      webhook,
			"pushservice":  pushService,
			"newhome":      newHome,
			"gitserve":     gitServe,
			"github":       gitHub,
			"sshd":         startSSHD,
			"sshdrop":      dropSSH,
			"sshdnewkey":   newSSHDKey,
			"microvmsetup": microvmSetup,
		},
	})
}

func setup(env *testscript.Env) error {
	home, err := clitest.MakeDir()
	if err != nil {
		return err
	}
	env.Setenv("PADDOCK_HOME", home)
	env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
	env.Setenv("GIT_AUTHOR_NAME", "Test Author")
	env.Setenv("GIT_AUTHOR_EMAIL", "author@example.com")
	env.Setenv("GIT_COMMITTER_NAME", "Test Author")
	env.Setenv("GIT_COMMITTER_EMAIL", "author@example.com")
	env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	env.Setenv("SSH_AUTH_SOCK", "/tmp/host-agent.sock")
	env.Setenv("HOST_SECRET", "s3cret-host-value")
	env.Defer(func() { clitest.Teardown(home, nil, "") })
	env.Values[sshdKey{}] = &sshdHolder{}
	return nil
}

type sshdKey struct{}

// sshdHolder keeps a script's sshd.
type sshdHolder struct{ srv *sshdtest.Server }

// scriptTB is a script as the sshd harness needs a test.
type scriptTB struct{ ts *testscript.TestScript }

func (scriptTB) Helper()                             {}
func (s scriptTB) Fatalf(format string, args ...any) { s.ts.Fatalf(format, args...) }
func (s scriptTB) Cleanup(f func())                  { s.ts.Defer(f) }

// startSSHD runs OpenSSH's server as another host (its own network namespace and
// paddock directory), and sets SSHD_URL, SSHD_KEY (the user key), SSHD_HOME (paddock's
// directory there) and SSHD_FP (its host key's fingerprint, as a regexp).
func startSSHD(ts *testscript.TestScript, neg bool, args []string) {
	srv := sshdtest.Run(scriptTB{ts})
	ts.Value(sshdKey{}).(*sshdHolder).srv = srv
	// Sandboxes left on the host go before it does (deferred calls run last first).
	home := ts.Getenv("PADDOCK_HOME")
	ts.Defer(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
		f.Paths = func() (config.Paths, error) { return config.ForHome(home) }
		if c, err := f.Client(ctx); err == nil {
			clitest.RemoveSandboxes(ctx, c)
		}
	})
	ts.Setenv("SSHD_URL", srv.URL())
	ts.Setenv("SSHD_KEY", srv.KeyFile)
	ts.Setenv("SSHD_HOME", srv.Home)
	ts.Setenv("SSHD_FP", regexp.QuoteMeta(ssh.FingerprintSHA256(srv.HostKey())))
}

// newSSHDKey gives the script's sshd another host key, as a reinstalled host would have,
// and sets SSHD_FP to its fingerprint.
func newSSHDKey(ts *testscript.TestScript, neg bool, args []string) {
	srv := ts.Value(sshdKey{}).(*sshdHolder).srv
	if srv == nil {
		ts.Fatalf("sshdnewkey: no sshd (run sshd first)")
	}
	srv.NewHostKey(scriptTB{ts})
	ts.Setenv("SSHD_FP", regexp.QuoteMeta(ssh.FingerprintSHA256(srv.HostKey())))
}

// dropSSH cuts every connection to the script's sshd, as a network going away would.
func dropSSH(ts *testscript.TestScript, neg bool, args []string) {
	srv := ts.Value(sshdKey{}).(*sshdHolder).srv
	if srv == nil {
		ts.Fatalf("sshdrop: no sshd (run sshd first)")
	}
	srv.Drop()
}

// newHome makes another PADDOCK_HOME, a second machine's, in the variable named, torn
// down at the end as the script's own is: newhome VAR.
func newHome(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: newhome VAR")
	}
	home, err := clitest.MakeDir()
	ts.Check(err)
	ts.Setenv(args[0], home)
	ts.Defer(func() { clitest.Teardown(home, nil, "") })
}

// condition adds [static]: this binary is statically linked, so it can serve as the
// guest in a root filesystem without a C library (CGO_ENABLED=0, as make test does).
func condition(cond string) (bool, error) {
	if cond == "docker" {
		return dockerReady(), nil
	}
	if cond == "microvm" {
		return microvmReady(), nil
	}
	if cond == "sshd" {
		what, _ := sshdtest.Missing()
		return what == "" || testenv.Strict(), nil
	}
	if cond != "static" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	self, err := os.Executable()
	if err != nil {
		return false, err
	}
	f, err := elf.Open(self)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

// dockerReady reports whether the docker backend can run here: an engine answers and
// the sandbox image exists. Under testenv.Strict (CI), it is taken as ready, so
// that a broken engine fails the docker scripts instead of skipping them.
func dockerReady() bool {
	if testenv.Strict() {
		return true
	}
	return exec.Command("docker", "image", "inspect", "paddock/sandbox:latest").Run() == nil
}

// killDaemon sends SIGKILL to the script's daemon, as a crash would.
func killDaemon(ts *testscript.TestScript, neg bool, args []string) {
	data, err := os.ReadFile(filepath.Join(ts.Getenv("PADDOCK_HOME"), "state", "daemon.lock"))
	ts.Check(err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	ts.Check(err)
	ts.Check(syscall.Kill(pid, 0)) // a daemon to kill
	ts.Check(clitest.Kill(pid))
}

// startUpstream starts an HTTP server on the host's loopback standing in for a model
// provider and for host services: it records every request's method, path and
// credential headers in $WORK/upstream.log, and sets UPSTREAM_URL and UPSTREAM_PORT.
func startUpstream(ts *testscript.TestScript, neg bool, args []string) {
	logPath := ts.MkAbs("upstream.log")
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%s %s x-api-key=%q authorization=%q\n", r.Method, r.URL.Path, r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))
			f.Close()
		}
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/v1/messages") {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message_start\ndata: {}\n\nevent: message_stop\ndata: {}\n\n")
			return
		}
		fmt.Fprintf(w, "hello from the host at %s\n", r.URL.Path)
	}))
	ts.Defer(srv.Close)
	ts.Setenv("UPSTREAM_URL", srv.URL)
	ts.Setenv("UPSTREAM_PORT", strings.TrimPrefix(srv.URL, "http://127.0.0.1:"))
}

// waitFor waits until a file exists: waitfor PATH.
func waitFor(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitfor PATH")
	}
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("%s did not appear", args[0])
}

// gitServe serves the bare repositories under DIR over git's smart HTTP protocol, with
// git's own http-backend, and puts the base URL in VAR: gitserve DIR VAR. Every request
// is logged to gitserve.log (method and path), so a script can tell who cloned.
func gitServe(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: gitserve DIR VAR")
	}
	out, err := exec.Command("git", "--exec-path").Output()
	ts.Check(err)
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + ts.MkAbs(args[0]), "GIT_HTTP_EXPORT_ALL=1"},
	}
	logPath := ts.MkAbs("gitserve.log")
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(f, "%s %s\n", r.Method, r.URL.Path)
			f.Close()
		}
		mu.Unlock()
		backend.ServeHTTP(w, r)
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[1], srv.URL)
}
