package conform

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
)

func testExec(t T, sb *sandbox) {
	for _, tc := range []struct {
		name           string
		script         string
		code           int
		stdout, stderr string
	}{
		{"success", "echo out", 0, "out\n", ""},
		{"exit code", "echo err >&2; exit 7", 7, "", "err\n"},
		{"both streams", "echo a; echo b >&2; echo c", 0, "a\nc\n", "b\n"},
		{"killed by signal", "kill -9 $$", 137, "", ""},
		{"working directory", "pwd", 0, "/workspace\n", ""},
	} {
		t.Run(tc.name, func(t T) {
			code, out, errOut := sb.run(t, tc.script)
			if code != tc.code || out != tc.stdout || errOut != tc.stderr {
				t.Fatalf("got code %d stdout %q stderr %q; want %d %q %q", code, out, errOut, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
	t.Run("stdin", func(t T) {
		in := strings.Repeat("line of input\n", 10000)
		code, out, _ := runWith(t, sb.client, guestclient.ExecOptions{Argv: []string{"cat"}, Stdin: strings.NewReader(in)})
		if code != 0 || out != in {
			t.Fatalf("cat echoed %d bytes (code %d), want %d", len(out), code, len(in))
		}
	})
	t.Run("not found", func(t T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		code, err := sb.client.Exec(ctx, guestclient.ExecOptions{Argv: []string{"/no/such/program"}})
		if code != 127 || err == nil {
			t.Fatalf("exec of a missing program: code %d, err %v; want 127 and an error", code, err)
		}
	})
	t.Run("env and dir", func(t T) {
		code, out, _ := runWith(t, sb.client, guestclient.ExecOptions{
			Argv: []string{"sh", "-c", "echo $GREETING; pwd"}, Env: []string{"GREETING=hello"}, Dir: "/tmp"})
		if code != 0 || out != "hello\n/tmp\n" {
			t.Fatalf("got %q", out)
		}
	})
	t.Run("concurrent", func(t T) {
		errs := make(chan error, 8)
		for i := range 8 {
			go func() {
				var out strings.Builder
				code, err := sb.client.Exec(context.Background(), guestclient.ExecOptions{
					Argv: []string{"sh", "-c", fmt.Sprintf("sleep 0.2; echo %d", i)}, Stdout: &out})
				if err == nil && (code != 0 || out.String() != fmt.Sprintf("%d\n", i)) {
					err = fmt.Errorf("exec %d: code %d output %q", i, code, out.String())
				}
				errs <- err
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	})
}

// testEnvironment checks the sandbox carries nothing of the host's environment and runs
// as the non-root user agent.
func testEnvironment(t T, sb *sandbox) {
	// On the process, where a backend would leak it from: the check's whole point.
	t.Setenv("PADDOCK_CONFORMANCE_SECRET", "host-secret-value")
	if got := sb.mustRun(t, "id -u; id -un; echo $HOME"); got != "1000\nagent\n/home/agent" {
		t.Fatalf("user: got %q, want uid 1000 named agent with home /home/agent", got)
	}
	env := sb.mustRun(t, "env")
	for _, leak := range []string{"PADDOCK_CONFORMANCE_SECRET", "host-secret-value", "SSH_AUTH_SOCK", "DOCKER_HOST"} {
		if strings.Contains(env, leak) {
			t.Errorf("sandbox environment carries %s:\n%s", leak, env)
		}
	}
	if home, _ := os.UserHomeDir(); home != "" && home != "/" {
		if code, _, _ := sb.run(t, "test -e "+home+"/."); code == 0 && home != inside.Home {
			t.Errorf("the host home %s is visible in the sandbox", home)
		}
	}
	for _, sock := range []string{"/var/run/docker.sock", "/run/docker.sock"} {
		if code, _, _ := sb.run(t, "test -e "+sock); code == 0 {
			t.Errorf("%s is visible in the sandbox", sock)
		}
	}
	if n, _ := strconv.Atoi(sb.mustRun(t, "find /proc -maxdepth 1 -name '[0-9]*' | wc -l")); n > 10 {
		t.Errorf("the sandbox sees %d processes: it has no pid namespace of its own", n)
	}
	if code, _, _ := sb.run(t, "echo x > /usr/paddock-write-test"); code == 0 {
		t.Error("/usr is writable from the sandbox")
	}
	// A new session: no controlling terminal, so no TIOCSTI into the host's terminal.
	if code, _, _ := sb.run(t, "exec 3</dev/tty"); code == 0 {
		t.Error("a sandbox process has a controlling terminal (/dev/tty opens)")
	}
}

func testPTY(t T, sb *sandbox) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stdinR, stdinW := ioPipe()
	out := &syncBuffer{}
	resize := make(chan guestclient.Size, 1)
	done := make(chan struct{})
	var code int
	var err error
	go func() {
		defer close(done)
		code, err = sb.client.Exec(ctx, guestclient.ExecOptions{
			Argv: []string{"sh", "-c", "stty size; test -t 0 && echo tty; read x; stty size"},
			TTY:  true, Size: guestclient.Size{Rows: 24, Cols: 80},
			Stdin: stdinR, Stdout: out, Resize: resize,
		})
	}()
	waitFor(t, out, "tty")
	if !strings.Contains(out.String(), "24 80") {
		t.Fatalf("initial size: output %q, want 24 80", out.String())
	}
	resize <- guestclient.Size{Rows: 50, Cols: 132}
	time.Sleep(100 * time.Millisecond) // the resize and the line travel on one ordered stream
	stdinW.Write([]byte("go\n"))
	<-done
	stdinW.Close()
	if err != nil || code != 0 {
		t.Fatalf("pty exec: code %d err %v output %q", code, err, out.String())
	}
	if !strings.Contains(out.String(), "50 132") {
		t.Fatalf("after resize: output %q, want 50 132", out.String())
	}
	testPTYInterrupt(t, sb)
}

// testPTYInterrupt checks that the process a terminal runs is in its foreground process
// group (asked of the terminal from inside: gVisor's /proc shows no tpgid), and that ^C
// typed on it stops the busy pipeline there, as it would on the user's own terminal.
func testPTYInterrupt(t T, sb *sandbox) {
	// Without ^C the flood never ends, so the bound only needs to end the test.
	const bound = 90 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	stdinR, stdinW := ioPipe()
	defer stdinW.Close()
	out := &syncBuffer{}
	done := make(chan struct{})
	var code int
	var err error
	go func() {
		defer close(done)
		code, err = sb.client.Exec(ctx, guestclient.ExecOptions{
			// The flood says it floods itself, once it runs: a shell's "echo flooding; yes"
			// leaves a moment between its fork and the exec of yes where the child is still
			// the shell, which catches SIGINT under -c, and a ^C typed then is lost with it
			// (dash waits on for a child that never got it; seen on loaded machines).
			Argv: []string{"sh", "-c", `perl -MPOSIX -e 'print POSIX::tcgetpgrp(0) == getpgrp() ? "fore" : "back", "ground\n"'; ` +
				`perl -e '$| = 1; print "flooding\n"; 1 while 1'`},
			TTY: true, Size: guestclient.Size{Rows: 24, Cols: 80},
			Stdin: stdinR, Stdout: out,
		})
	}()
	waitFor(t, out, "flooding")
	if !strings.Contains(out.String(), "foreground") {
		t.Fatalf("the terminal's process is not in its foreground group: %q", out.String())
	}
	start := time.Now()
	stdinW.Write([]byte{3})
	<-done
	if ctx.Err() != nil {
		t.Fatalf("^C on the terminal did not stop the flood in %v: output %q", bound, out.String())
	}
	if err != nil || code != 130 {
		t.Fatalf("after ^C: code %d err %v, want 130 (SIGINT) output %q", code, err, out.String())
	}
	t.Logf("^C stopped the flood in %v", time.Since(start).Round(time.Millisecond))
}
