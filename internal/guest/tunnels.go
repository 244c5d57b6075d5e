package guest

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

const (
	// tunnelBufferSize is the read size for tunnelled connections.
	tunnelBufferSize = 32 << 10
	// dialTimeout bounds Forward's connection to the sandbox's loopback.
	dialTimeout = 10 * time.Second
)

// tunnelStream is the server side of Forward and Accept.
type tunnelStream interface {
	Context() context.Context
	Send(*guestpb.TunnelData) error
	Recv() (*guestpb.TunnelData, error)
}

type tunnelsService struct {
	s *Server
}

// Forward connects to 127.0.0.1:port inside the sandbox and carries the connection.
func (t tunnelsService) Forward(stream guestpb.DRPCTunnels_ForwardStream) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	open := first.GetOpen()
	if open == nil {
		return guestproto.Errorf(guestproto.InvalidArgument, "forward: the first request must carry open")
	}
	if open.GetPort() == 0 || open.GetPort() > 65535 {
		return guestproto.Errorf(guestproto.InvalidArgument, "forward: invalid port %d", open.GetPort())
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(open.GetPort())))
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(stream.Context(), "tcp", addr)
	if err != nil {
		return guestproto.Errorf(guestproto.Unavailable, "forward: dial %s: %v", addr, err)
	}
	return pipeTunnel(stream, conn)
}

// Listen listens on 127.0.0.1:port inside the sandbox, announces the port, then
// announces each accepted connection, which waits in the pending table for Accept. Ending
// the call closes the listener and the connections nobody claimed.
func (t tunnelsService) Listen(req *guestpb.ListenRequest, stream guestpb.DRPCTunnels_ListenStream) error {
	if req.GetPort() > 65535 {
		return guestproto.Errorf(guestproto.InvalidArgument, "listen: invalid port %d", req.GetPort())
	}
	if req.GetPort() != 0 {
		// Known before it listens, so the port watcher never takes it for the sandbox's.
		defer t.s.addOwnPort(int(req.GetPort()))()
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(req.GetPort())))
	ln, held, err := t.s.listenOwn(addr, int(req.GetPort()))
	if err != nil {
		code := guestproto.Unavailable
		if errors.Is(err, syscall.EADDRINUSE) {
			code = guestproto.AlreadyExists
		}
		return guestproto.Errorf(code, "listen %s: %v", addr, err)
	}
	defer t.s.letGo(int(req.GetPort()), held)
	defer ln.Close()
	ctx := stream.Context()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	owner := t.s.pending.newOwner()
	defer t.s.pending.drop(owner)

	port := ln.Addr().(*net.TCPAddr).Port
	if req.GetPort() == 0 {
		defer t.s.addOwnPort(port)()
	}
	if err := stream.Send(&guestpb.ListenEvent{Msg: &guestpb.ListenEvent_ReadyPort{ReadyPort: uint32(port)}}); err != nil {
		return err
	}
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if held != nil && held.takenOver.Load() {
				return guestproto.Errorf(guestproto.Unavailable, "listen %s: a later Listen took the port over", addr)
			}
			return guestproto.Errorf(guestproto.Unavailable, "listen %s: accept: %v", ln.Addr(), err)
		}
		id := t.s.pending.add(owner, conn)
		if err := stream.Send(&guestpb.ListenEvent{Msg: &guestpb.ListenEvent_Accepted{Accepted: id}}); err != nil {
			return err
		}
	}
}

// heldPort is a fixed port a Listen call listens on.
type heldPort struct {
	ln        net.Listener
	takenOver atomic.Bool
}

// listenOwn listens on addr. A fixed port (not 0) that an earlier Listen call still holds
// is taken from it: that call ends, and the new one gets the port. A daemon connecting
// again asks for its tunnels' ports at once, while the guest may not have seen its old
// connection end yet (the old call's listener would otherwise hold the port until then).
// held is nil for port 0.
func (s *Server) listenOwn(addr string, port int) (net.Listener, *heldPort, error) {
	if port == 0 {
		ln, err := net.Listen("tcp", addr)
		return ln, nil, err
	}
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if old := s.held[port]; old != nil {
		old.takenOver.Store(true)
		old.ln.Close() // returns once the socket is closed, the port free
		delete(s.held, port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	h := &heldPort{ln: ln}
	s.held[port] = h
	return ln, h, nil
}

// letGo forgets a port listenOwn gave, unless a later call has taken it over since.
func (s *Server) letGo(port int, h *heldPort) {
	if h == nil {
		return
	}
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if s.held[port] == h {
		delete(s.held, port)
	}
}

// Accept claims a connection announced by Listen and carries it.
func (t tunnelsService) Accept(stream guestpb.DRPCTunnels_AcceptStream) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	id := first.GetConnId()
	if id == "" {
		return guestproto.Errorf(guestproto.InvalidArgument, "accept: the first request must carry conn_id")
	}
	conn := t.s.pending.claim(id)
	if conn == nil {
		return guestproto.Errorf(guestproto.NotFound, "accept: no pending connection %q (expired or already claimed)", id)
	}
	return pipeTunnel(stream, conn)
}

// pipeTunnel carries data both ways between stream and conn until both directions have
// ended. A close_write (or the end of the client's stream) half-closes conn; EOF from conn
// is sent as close_write.
func pipeTunnel(stream tunnelStream, conn net.Conn) error {
	defer conn.Close()
	// The first message tells the client that the connection is up (Forward) or claimed
	// (Accept).
	if err := stream.Send(&guestpb.TunnelData{Msg: &guestpb.TunnelData_Up{Up: true}}); err != nil {
		return err
	}
	stop := context.AfterFunc(stream.Context(), func() { conn.Close() })
	defer stop()
	up := make(chan error, 1)
	go func() { up <- connToStream(stream, conn) }()
	if err := streamToConn(stream, conn); err != nil {
		conn.Close()
		<-up
		return err
	}
	return <-up
}

// connToStream sends what conn delivers, then close_write.
func connToStream(stream tunnelStream, conn net.Conn) error {
	buf := make([]byte, tunnelBufferSize)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			if serr := stream.Send(&guestpb.TunnelData{Msg: &guestpb.TunnelData_Data{Data: buf[:n]}}); serr != nil {
				return serr
			}
		}
		if err != nil {
			serr := stream.Send(&guestpb.TunnelData{Msg: &guestpb.TunnelData_CloseWrite{CloseWrite: true}})
			if errors.Is(err, io.EOF) {
				return serr
			}
			return guestproto.Errorf(guestproto.Unavailable, "tunnel: read: %v", err)
		}
	}
}

// streamToConn writes what the client sends to conn until the client half-closes.
func streamToConn(stream tunnelStream, conn net.Conn) error {
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return closeWrite(conn)
		}
		if err != nil {
			return err
		}
		switch msg := m.GetMsg().(type) {
		case *guestpb.TunnelData_Data:
			if _, err := conn.Write(msg.Data); err != nil {
				return guestproto.Errorf(guestproto.Unavailable, "tunnel: write: %v", err)
			}
		case *guestpb.TunnelData_CloseWrite:
			if msg.CloseWrite {
				return closeWrite(conn)
			}
		}
	}
}

// closeWrite half-closes conn.
func closeWrite(conn net.Conn) error {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		if err := cw.CloseWrite(); err != nil && !errors.Is(err, net.ErrClosed) {
			return guestproto.Errorf(guestproto.Unavailable, "tunnel: close write: %v", err)
		}
	}
	return nil
}
