package cli_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/clitest"
	"github.com/paddockhq/paddock/internal/modeltest"
)

// signalWriter closes ready the first time what it has been written contains marker.
type signalWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	ready  chan struct{}
	once   sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.marker) {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

// BenchmarkAttach measures attach latency as a user sees it: from running
// `paddock exec -t SANDBOX -- tmux attach` (what `paddock chat` runs) to the session's
// screen on the terminal; the baseline is attaching a host tmux client, through a local
// pty, to a host tmux session showing the same screen, in the same run.
func BenchmarkAttach(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	home, repo := benchHome(b)
	ctx := context.Background()
	run := func(args ...string) {
		var errOut strings.Builder
		f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut})
		if code := cli.Run(ctx, f, args); code != 0 {
			b.Fatalf("paddock %v: %d %s", args, code, errOut.String())
		}
	}
	const screen = "READY-SCREEN-0123"
	run("up", repo)
	run("chat", "repo", "--new", "s", "--agent", "shell", "--command", "echo "+screen+"; sleep 100000")

	hostSock := filepath.Join(home, "host-tmux.sock")
	if out, err := exec.Command("tmux", "-S", hostSock, "new-session", "-d", "-s", "s", "-x", "200", "-y", "50", "sh", "-c", "echo "+screen+"; sleep 100000").CombinedOutput(); err != nil {
		b.Fatalf("host tmux: %v %s", err, out)
	}
	defer exec.Command("tmux", "-S", hostSock, "kill-server").Run()

	b.ResetTimer()
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		ours += attachTime(b, screen)

		start := time.Now()
		cmd := exec.Command("tmux", "-S", hostSock, "attach", "-t", "=s")
		cmd.Env = append(os.Environ(), "TERM=xterm-256color")
		tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
		if err != nil {
			b.Fatal(err)
		}
		hw := &signalWriter{marker: screen, ready: make(chan struct{})}
		go io.Copy(hw, tty)
		select {
		case <-hw.ready:
		case <-time.After(20 * time.Second):
			b.Fatalf("no host screen: %q", hw.buf.String())
		}
		base += time.Since(start)
		cmd.Process.Kill()
		cmd.Wait()
		tty.Close()
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N)/1e6, "ms/attach")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N)/1e6, "baseline-ms/attach")
	b.ReportMetric(float64(ours)/float64(base), "x-baseline")
}

// BenchmarkAskClaude measures `paddock chat --non-interactive` with the real Claude Code
// against a scripted model: the message pasted into the session's Claude Code, the turn
// waited for, the answer read from the transcript. The baseline is what a user would
// otherwise run for one answer, `claude -p --resume` directly on the host against the
// same model server, in the same run.
func BenchmarkAskClaude(b *testing.B) {
	if _, err := exec.LookPath("claude"); err != nil {
		b.Skip("claude is not installed")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	model := modeltest.NewAnthropic(b)
	b.Setenv("ANTHROPIC_BASE_URL", model.URL())
	b.Setenv("ANTHROPIC_API_KEY", "sk-bench")
	home, repo := benchHome(b)
	ctx := context.Background()
	var out strings.Builder
	run := func(stdin string, args ...string) string {
		var errOut strings.Builder
		out.Reset()
		f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
		if code := cli.Run(ctx, f, args); code != 0 {
			b.Fatalf("paddock %v: %d %s", args, code, errOut.String())
		}
		return out.String()
	}
	run("", "up", repo, "--agent", "claude")
	run("", "chat", "repo/claude", "--non-interactive", "-m", "warm up")

	// The baseline: the same print-mode resume, straight on the host.
	hostHome := filepath.Join(home, "hosthome")
	os.MkdirAll(hostHome, 0o700)
	sessionID := "7d5a3a43-8f0e-4c1a-9d1e-2b3c4d5e6f70"
	hostClaude := func(args ...string) {
		cmd := model.ClaudeCmd(ctx, hostHome, repo, args...)
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("host claude: %v %s", err, o)
		}
	}
	hostClaude("-p", "warm up", "--session-id", sessionID, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions")

	b.ResetTimer()
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if got := run("", "chat", "repo/claude", "--non-interactive", "-m", "ping"); strings.TrimSpace(got) != "ECHO: ping" {
			b.Fatalf("answer %q", got)
		}
		ours += time.Since(start)
		start = time.Now()
		hostClaude("-p", "ping", "--resume", sessionID, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions")
		base += time.Since(start)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N)/1e6, "ms/ask")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N)/1e6, "baseline-ms/ask")
	b.ReportMetric(float64(ours-base)/float64(b.N)/1e6, "overhead-ms/ask")
	b.ReportMetric(float64(ours)/float64(base), "x-baseline")
}

// benchHome is e2eHome for benchmarks.
func benchHome(b *testing.B) (home, repo string) {
	home, err := os.MkdirTemp("", "pdk")
	if err != nil {
		b.Fatal(err)
	}
	os.Chmod(home, 0o711)
	b.Setenv("PADDOCK_HOME", home)
	b.Cleanup(func() { clitest.Teardown(home, nil, "") })
	repo = filepath.Join(home, "repo")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo},
		{"-C", repo, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if o, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, o)
		}
	}
	return home, repo
}
