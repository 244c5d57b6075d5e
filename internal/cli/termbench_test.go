package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/creack/pty"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/config"
)

// BenchmarkTerminal measures a terminal's output as the web UI gets it: `cat` of 48 MB of
// text on a pty inside a bwrap sandbox, to a client of the exec WebSocket (the route the
// UI's terminal uses), against the same bytes through a local pty on the host, in the
// same run.
func BenchmarkTerminal(b *testing.B) {
	run, h := upRepo(b)
	home := h.Dir
	ctx := context.Background()
	const gen = "head -c 36000000 /dev/urandom | base64 -w 120 > "
	run("exec", "repo", "--", "sh", "-c", gen+"/tmp/data")
	local := filepath.Join(home, "data")
	if out, err := exec.Command("sh", "-c", gen+local).CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	paths, _ := config.ForHome(home)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", paths.Socket)
	}}}

	overWebSocket := func() (int64, time.Duration) {
		c, _, err := websocket.Dial(ctx, "ws://paddock/v1/sandboxes/repo/exec", &websocket.DialOptions{HTTPClient: hc})
		if err != nil {
			b.Fatal(err)
		}
		defer c.CloseNow()
		c.SetReadLimit(-1)
		first, _ := json.Marshal(wire.ExecRequest{Argv: []string{"cat", "/tmp/data"}, TTY: true, Rows: 50, Cols: 200})
		start := time.Now()
		if err := c.Write(ctx, websocket.MessageText, first); err != nil {
			b.Fatal(err)
		}
		var n int64
		for {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if typ == websocket.MessageBinary && len(msg) > 0 {
				n += int64(len(msg) - 1)
				continue
			}
			var ctl wire.Control
			if json.Unmarshal(msg, &ctl) == nil && ctl.Type == "exit" {
				return n, time.Since(start)
			}
		}
	}
	localPty := func() (int64, time.Duration) {
		start := time.Now()
		p, err := pty.StartWithSize(exec.Command("cat", local), &pty.Winsize{Rows: 50, Cols: 200})
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, p) // ends with EIO once cat exits
		p.Close()
		return n, time.Since(start)
	}
	var wsBytes, ptyBytes int64
	var wsTime, ptyTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n, d := overWebSocket()
		wsBytes, wsTime = wsBytes+n, wsTime+d
		n, d = localPty()
		ptyBytes, ptyTime = ptyBytes+n, ptyTime+d
	}
	b.StopTimer()
	ws := float64(wsBytes) / wsTime.Seconds() / 1e6
	lp := float64(ptyBytes) / ptyTime.Seconds() / 1e6
	b.ReportMetric(ws, "websocket-MB/s")
	b.ReportMetric(lp, "local-pty-MB/s")
	b.ReportMetric(lp/ws, "local-x-websocket")
}
