package guest

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"storj.io/drpc"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

func TestRelPath(t *testing.T) {
	tests := []struct {
		path, want string
		escapes    bool
	}{
		{"", ".", false},
		{".", ".", false},
		{"a/b", "a/b", false},
		{"a/../b", "b", false},
		{"/ws/a/b", "a/b", false},
		{"/ws", ".", false},
		{"/ws/", ".", false},
		{"..", "", true},
		{"../x", "", true},
		{"a/../../x", "", true},
		{"/etc/passwd", "", true},
		{"/wsx/a", "", true},
		{"/ws/../ws2", "", true},
	}
	for _, tt := range tests {
		got, err := relPath("/ws", tt.path)
		if tt.escapes {
			if guestproto.CodeOf(err) != guestproto.PathEscapes {
				t.Errorf("relPath(%q) = %q, %v; want PathEscapes", tt.path, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("relPath(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
}

func TestStatusError(t *testing.T) {
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.Symlink("/etc", filepath.Join(root.Name(), "evil")); err != nil {
		t.Fatal(err)
	}
	_, missing := root.Open("missing")
	_, escape := root.Open("evil/passwd")
	exist := root.Mkdir("evil", 0o755)
	tests := []struct {
		err  error
		code guestproto.Code
		msg  string
	}{
		{missing, guestproto.NotFound, "open /ws/x: file does not exist"},
		{escape, guestproto.PathEscapes, "open /ws/x: path escapes root"},
		{exist, guestproto.AlreadyExists, "open /ws/x: file already exists"},
	}
	for _, tt := range tests {
		err := statusError("open", "/ws/x", tt.err)
		if code := guestproto.CodeOf(err); code != tt.code || err.Error() != tt.msg {
			t.Errorf("statusError(%v) = %v %q, want %v %q", tt.err, code, err.Error(), tt.code, tt.msg)
		}
	}
}

func TestReadRSS(t *testing.T) {
	p := filepath.Join(t.TempDir(), "status")
	os.WriteFile(p, []byte("Name:\tagent\nVmPeak:\t  9000 kB\nVmRSS:\t   1234 kB\nThreads:\t4\n"), 0o644)
	if n, err := readRSS(p); err != nil || n != 1234*1024 {
		t.Errorf("readRSS = %d, %v; want %d", n, err, 1234*1024)
	}
	if n, err := readRSS("/proc/self/status"); err != nil || n <= 0 {
		t.Errorf("readRSS(/proc/self/status) = %d, %v", n, err)
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tool"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o644)
	if p, err := lookPath("tool", "/nonexistent:"+dir); err != nil || p != filepath.Join(dir, "tool") {
		t.Errorf("lookPath(tool) = %q, %v", p, err)
	}
	if _, err := lookPath("data", dir); err == nil {
		t.Error("lookPath found a file that is not executable")
	}
	if p, err := lookPath("./rel/x", ""); err != nil || p != "./rel/x" {
		t.Errorf("lookPath(./rel/x) = %q, %v; want it unchanged", p, err)
	}
	if got := lastEnv([]string{"PATH=/a", "X=1", "PATH=/b"}, "PATH"); got != "/b" {
		t.Errorf("lastEnv = %q, want /b", got)
	}
}

func TestSplitParents(t *testing.T) {
	if got := splitParents("a/b/c"); len(got) != 2 || got[0] != "a" || got[1] != "a/b" {
		t.Errorf("splitParents(a/b/c) = %q", got)
	}
	if got := splitParents("a"); len(got) != 0 {
		t.Errorf("splitParents(a) = %q", got)
	}
}

func TestServeConnRefusesOtherProtocol(t *testing.T) {
	srv := NewServer(Options{Version: "test"})
	a, b := net.Pipe()
	defer a.Close()
	served := make(chan error, 1)
	go func() { served <- srv.ServeConn(t.Context(), b) }()
	json.NewEncoder(a).Encode(guestproto.Hello{Magic: guestproto.Magic, Protocol: guestproto.Protocol + 1})
	line, err := bufio.NewReader(a).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var reply guestproto.Hello
	if err := json.Unmarshal(line, &reply); err != nil || reply.Error == "" || reply.Protocol != guestproto.Protocol {
		t.Errorf("reply %s (%v), want a refusal naming protocol %d", line, err, guestproto.Protocol)
	}
	if err := <-served; !errors.Is(err, guestproto.ErrProtocolMismatch) {
		t.Errorf("ServeConn = %v, want ErrProtocolMismatch", err)
	}
}

// TestInfoUnderItsWireName: a daemon from before the Guest service took its name calls
// Info as the Agent service's, and the guest still answers it.
func TestInfoUnderItsWireName(t *testing.T) {
	var info guestpb.InfoResponse
	err := dialGuest(t, NewServer(Options{Version: "test"})).Invoke(t.Context(), "/paddock.agent.v1.Agent/Info",
		protoEncoding{}, &guestpb.InfoRequest{}, &info)
	if err != nil || info.GetVersion() != "test" || info.GetProtocol() != guestproto.Protocol {
		t.Fatalf("Info = %v, %v; want version test of protocol %d", &info, err, guestproto.Protocol)
	}
}

// protoEncoding encodes a DRPC call's messages as every daemon does.
type protoEncoding struct{}

func (protoEncoding) Marshal(msg drpc.Message) ([]byte, error) { return guestproto.Marshal(msg) }
func (protoEncoding) Unmarshal(buf []byte, msg drpc.Message) error {
	return guestproto.Unmarshal(buf, msg)
}

func TestPendingConns(t *testing.T) {
	p := newPendingConns()
	owner := p.newOwner()
	c1, peer1 := net.Pipe()
	c2, peer2 := net.Pipe()
	defer peer1.Close()
	defer peer2.Close()
	id1 := p.add(owner, c1)
	id2 := p.add(owner, c2)
	if id1 == id2 || len(id1) != 32 {
		t.Fatalf("ids %q and %q", id1, id2)
	}
	if got := p.claim(id1); got != c1 {
		t.Error("claim did not return the connection")
	}
	if got := p.claim(id1); got != nil {
		t.Error("a connection was claimed twice")
	}
	p.drop(owner)
	if got := p.claim(id2); got != nil {
		t.Error("a dropped connection was claimed")
	}
	if _, err := peer2.Write([]byte("x")); err == nil {
		t.Error("the dropped connection is still open")
	}
	c1.Close()
}
