package cli_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/testenv"
)

// wsEcho is a WebSocket server in the Python standard library alone: the RFC 6455
// handshake, then each text frame from the client echoed back with "echo: " before it.
const wsEcho = `
import base64, hashlib, socket, struct, sys, threading
def serve(c):
    req = b""
    while b"\r\n\r\n" not in req:
        req += c.recv(4096)
    key = [l.split(b":", 1)[1].strip() for l in req.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key:")][0]
    acc = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + acc + b"\r\n\r\n")
    f = c.makefile("rb")
    while True:
        h = f.read(2)
        if len(h) < 2: return
        op, n = h[0] & 15, h[1] & 127
        if n == 126: n = struct.unpack(">H", f.read(2))[0]
        elif n == 127: n = struct.unpack(">Q", f.read(8))[0]
        mask = f.read(4)
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(f.read(n)))
        if op == 8: c.sendall(b"\x88\x00"); return
        out = b"echo: " + data
        c.sendall(bytes([0x81, len(out)]) + out)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
`

// TestPreviewWebSocket: a WebSocket to a server inside the sandbox works through the
// port's preview, and not without a sign-in.
func TestPreviewWebSocket(t *testing.T) {
	t.Parallel()
	testenv.Program(t, "python3", "apt-get install python3")
	run, _ := upRepo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run("chat", "repo", "--new", "echo", "--agent", "shell", "--command", "exec python3 -c '"+wsEcho+"' 8124")
	var st wire.WebStatus
	if err := json.Unmarshal([]byte(run("web", "--listen", "127.0.0.1:0", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	webPort := st.Listen[strings.LastIndex(st.Listen, ":")+1:]
	token := strings.TrimSpace(run("token", "create", "--name", "ws"))
	for i := 0; !strings.Contains(run("ports", "repo"), "8124"); i++ {
		if i == 100 {
			t.Fatal("the WebSocket server inside never listened")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Go resolves only "localhost" itself: dial the loopback, name the preview's host.
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, "127.0.0.1:"+webPort)
	}}}
	u := "ws://8124-repo.localhost:" + webPort + "/chat"

	if _, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: client}); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a sign-in: %v %v", resp, err)
	}
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: client, HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for _, msg := range []string{"hello", "from the host"} {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, got, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "echo: "+msg {
			t.Fatalf("got %q, want the echo of %q", got, msg)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")

	// The path form, as a page of it opens one: from its opaque origin (Origin: null),
	// with no cookie, by the preview key its address carries.
	keyed := keyedPreviewPath(t, st, "/preview/repo/8124/")
	c, _, err = websocket.Dial(ctx, "ws://127.0.0.1:"+webPort+keyed+"chat", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"null"}}})
	if err != nil {
		t.Fatalf("the path form's WebSocket: %v", err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte("by key")); err != nil {
		t.Fatal(err)
	}
	if _, got, err := c.Read(ctx); err != nil || string(got) != "echo: by key" {
		t.Fatalf("the path form's WebSocket read %q, %v", got, err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	i := strings.Index(keyed, "/~pv-") + len("/~pv-")
	bad := keyed[:i] + strings.Repeat("A", 43) + keyed[i+43:]
	if _, resp, err := websocket.Dial(ctx, "ws://127.0.0.1:"+webPort+bad+"chat", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"null"}}}); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a WebSocket with a wrong key: %v %v", resp, err)
	}
}
