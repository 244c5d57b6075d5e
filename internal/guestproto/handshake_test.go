package guestproto

import (
	"bytes"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
)

// scriptedConn is a net.Conn that reads from a fixed input and records what is written.
type scriptedConn struct {
	net.Conn
	in  *bytes.Reader
	out bytes.Buffer
}

func (c *scriptedConn) Read(p []byte) (int, error)       { return c.in.Read(p) }
func (c *scriptedConn) Write(p []byte) (int, error)      { return c.out.Write(p) }
func (c *scriptedConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptedConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzHandshake feeds arbitrary bytes to both sides of the handshake as the peer's
// hello. Whatever arrives, neither side may panic, read past the end of the hello line
// (the bytes after it belong to the yamux session), or accept a hello that is not the
// current protocol's; the guest always answers with one well-formed line.
func FuzzHandshake(f *testing.F) {
	hello := func(h Hello) string {
		b, _ := json.Marshal(h)
		return string(b) + "\n"
	}
	for _, s := range []string{
		hello(Hello{Magic: Magic, Protocol: Protocol, Version: "v1"}) + "yamux bytes",
		hello(Hello{Magic: Magic, Protocol: Protocol + 1, Version: "v2"}),
		hello(Hello{Magic: Magic, Protocol: Protocol, Error: "refused"}),
		hello(Hello{Magic: "other", Protocol: Protocol}),
		`{"magic":"paddock-agent","protocol":1,"magic":"x"}` + "\n",
		`{"magic":"paddock-agent","protocol":1.5}` + "\n",
		`{"magic":"paddock-agent","protocol":"1"}` + "\n",
		"SSH-2.0-OpenSSH_9.6\r\n",
		"", "\n", "{}\n", "null\n", "[]\n",
		strings.Repeat("x", 5000) + "\n",
		`{"magic":"paddock-agent","protocol":1}`, // no newline: the peer hung up
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		line, rest, complete := bytes.Cut(data, []byte("\n"))
		var want Hello
		valid := complete && len(line) <= maxHelloLine && json.Unmarshal(line, &want) == nil && want.Magic == Magic

		client := &scriptedConn{in: bytes.NewReader(data)}
		got, err := ClientHandshake(client, "fuzz")
		if err == nil {
			if !valid || got.Protocol != Protocol || got.Error != "" {
				t.Fatalf("the daemon accepted %q", data)
			}
			if left := data[len(data)-client.in.Len():]; !bytes.Equal(left, rest) {
				t.Fatalf("the daemon read past the hello: %q left of %q, want %q", left, data, rest)
			}
		}

		server := &scriptedConn{in: bytes.NewReader(data)}
		got, serr := ServerHandshake(server, "fuzz")
		if serr == nil && (!valid || got.Protocol != Protocol) {
			t.Fatalf("the guest accepted %q", data)
		}
		if valid {
			if left := data[len(data)-server.in.Len():]; !bytes.Equal(left, rest) {
				t.Fatalf("the guest read past the hello: %q left, want %q", left, rest)
			}
			reply, err := readHello(bytes.NewReader(server.out.Bytes()))
			if err != nil || reply.Protocol != Protocol || !bytes.HasSuffix(server.out.Bytes(), []byte("\n")) ||
				bytes.Count(server.out.Bytes(), []byte("\n")) != 1 {
				t.Fatalf("the guest's answer to %q is not one hello line: %q (%v)", data, server.out.String(), err)
			}
			if (serr == nil) != (reply.Error == "") {
				t.Fatalf("the guest's answer %q does not match its verdict %v", server.out.String(), serr)
			}
		}
	})
}

// A guest refuses, in its answer, a stream kind it does not serve, and announces the
// ones it does; the daemon sees the refusal as an error, not as a session.
func TestHandshakeStream(t *testing.T) {
	for _, tc := range []struct {
		stream   string
		features []string
		refused  bool
	}{
		{"", nil, false},
		{"", []string{StreamFiles}, false},
		{StreamFiles, []string{StreamFiles}, false},
		{StreamFiles, nil, true},
		{"other", []string{StreamFiles}, true},
	} {
		a, b := net.Pipe()
		done := make(chan error, 1)
		go func() {
			_, err := ServerHandshake(b, "guest", tc.features...)
			done <- err
		}()
		peer, err := ClientHandshakeStream(a, "daemon", tc.stream)
		serr := <-done
		a.Close()
		b.Close()
		if tc.refused != (err != nil) || tc.refused != (serr != nil) {
			t.Errorf("stream %q, features %v: daemon %v, guest %v; refused should be %v", tc.stream, tc.features, err, serr, tc.refused)
		}
		if !tc.refused && len(peer.Features) != len(tc.features) {
			t.Errorf("stream %q: the guest announced %v, want %v", tc.stream, peer.Features, tc.features)
		}
	}
}
