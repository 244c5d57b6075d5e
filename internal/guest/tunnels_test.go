package guest

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/yamux"
	"storj.io/drpc/drpcconn"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// dialGuest connects a bare DRPC connection to srv over a new in-memory connection:
// one yamux stream, for one call.
func dialGuest(t *testing.T, srv *Server) *drpcconn.Conn {
	t.Helper()
	a, b := net.Pipe()
	go func() { _ = srv.ServeConn(t.Context(), b) }()
	if _, err := guestproto.ClientHandshake(a, "test"); err != nil {
		t.Fatal(err)
	}
	sess, err := yamux.Client(a, guestproto.YamuxConfig())
	if err != nil {
		t.Fatal(err)
	}
	stream, err := sess.Open()
	if err != nil {
		t.Fatal(err)
	}
	cc := drpcconn.New(stream)
	t.Cleanup(func() {
		cc.Close()
		sess.Close()
	})
	return cc
}

// TestAcceptOnOtherConnection announces a connection on one guest connection and claims
// it on another: the pending table belongs to the Server, not to a connection.
func TestAcceptOnOtherConnection(t *testing.T) {
	srv := NewServer(Options{})
	ctx := t.Context()
	listener := guestpb.NewDRPCTunnelsClient(dialGuest(t, srv))
	claimer := guestpb.NewDRPCTunnelsClient(dialGuest(t, srv))

	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := listener.Listen(lctx, &guestpb.ListenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := events.Recv()
	if err != nil {
		t.Fatal(err)
	}
	port := ev.GetReadyPort()
	tcp, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	ev, err = events.Recv()
	if err != nil || ev.GetAccepted() == "" {
		t.Fatalf("announcement %v, %v", ev, err)
	}

	stream, err := claimer.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&guestpb.TunnelData{Msg: &guestpb.TunnelData_ConnId{ConnId: ev.GetAccepted()}}); err != nil {
		t.Fatal(err)
	}
	io.WriteString(tcp, "over there")
	tcp.(*net.TCPConn).CloseWrite()
	var got []byte
	for {
		m, err := stream.Recv()
		if err != nil {
			t.Fatalf("recv: %v (got %q)", err, got)
		}
		got = append(got, m.GetData()...)
		if m.GetCloseWrite() {
			break
		}
	}
	if string(got) != "over there" {
		t.Errorf("claimed connection carried %q", got)
	}

	// A second claim of the same id fails.
	again, err := guestpb.NewDRPCTunnelsClient(dialGuest(t, srv)).Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again.Send(&guestpb.TunnelData{Msg: &guestpb.TunnelData_ConnId{ConnId: ev.GetAccepted()}})
	if _, err := again.Recv(); err == nil {
		t.Error("a connection was claimed twice")
	}
}

// TestListenTakesOverItsOwnPort asks for a fixed port that a Listen of another connection
// still holds, as a daemon does when it connects again before the guest has seen its old
// connection end (paddock start on a running sandbox, a daemon restarted): the new Listen
// gets the port and the connections made to it, and the old one ends.
func TestListenTakesOverItsOwnPort(t *testing.T) {
	srv := NewServer(Options{})
	ctx := t.Context()
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint32(probe.Addr().(*net.TCPAddr).Port)
	probe.Close()
	listen := func() guestpb.DRPCTunnels_ListenClient {
		t.Helper()
		events, err := guestpb.NewDRPCTunnelsClient(dialGuest(t, srv)).Listen(ctx, &guestpb.ListenRequest{Port: port})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.Recv()
		if err != nil {
			t.Fatalf("listen on port %d: %v", port, err)
		}
		if ev.GetReadyPort() != port {
			t.Fatalf("listening on port %d, asked for %d", ev.GetReadyPort(), port)
		}
		return events
	}
	old := listen()
	cur := listen()
	if _, err := old.Recv(); err == nil {
		t.Error("the Listen whose port was taken over goes on")
	}
	tcp, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	if ev, err := cur.Recv(); err != nil || ev.GetAccepted() == "" {
		t.Fatalf("the new Listen announced %v, %v", ev, err)
	}

	// A port a process of the sandbox holds is not taken from it.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	events, err := guestpb.NewDRPCTunnelsClient(dialGuest(t, srv)).Listen(ctx, &guestpb.ListenRequest{Port: uint32(busy.Addr().(*net.TCPAddr).Port)})
	if err == nil {
		_, err = events.Recv()
	}
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("listen on a port the sandbox holds: %v", err)
	}
}
