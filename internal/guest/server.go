// Package guest is the guest: the small process inside every sandbox that runs
// commands, moves files and carries tunnels for the daemon. It serves the DRPC services of
// guestpb over a yamux session that follows the guestproto handshake on one byte stream.
//
// The package is guest-side only: it must not import the daemon, CLI or TUI packages.
package guest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"
	"storj.io/drpc"
	"storj.io/drpc/drpcmux"
	"storj.io/drpc/drpcserver"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// Options configures a Server.
type Options struct {
	// Sandbox is the sandbox's name, reported by Info.
	Sandbox string
	// Version is the paddock version string, sent in the handshake and by Info.
	Version string
	// Logger receives the guest's diagnostics. It must never write to stdout, which may
	// carry the protocol. Nil discards them.
	Logger *slog.Logger
	// StatusDir is the directory of the sessions' status files, watched for
	// session-status and session-exited events; empty watches none.
	StatusDir string
	// Workspace is the repository whose branches are watched for branch-moved events;
	// empty watches none.
	Workspace string
	// Proc is where the port and tmux watchers read the process table ("/proc" when
	// empty): a test gives one of its own, quiet whatever else runs on the machine.
	Proc string
}

// Server serves the guest protocol. One Server serves any number of connections, one
// after another or at once; state that outlives a connection (pending reverse-tunnel
// connections) is shared between them.
type Server struct {
	opts    Options
	log     *slog.Logger
	started time.Time
	pending *pendingConns
	events  *hub
	handler drpc.Handler

	// pokes wakes the watchers (poke) when something happens in the sandbox; looks
	// counts the watchers' looks.
	pokes chan struct{}
	looks atomic.Int64

	mu       sync.Mutex
	ownPorts map[int]int // ports of the guest's own listeners (Tunnels.Listen), counted
	// held are the fixed ports Tunnels.Listen calls listen on (listenOwn).
	heldMu sync.Mutex
	held   map[int]*heldPort
	// ownWrites are the states the daemon's own writes left files in (ownWrite).
	ownWrites map[string]fileStamp
}

// NewServer returns a Server ready to serve connections.
func NewServer(opts Options) *Server {
	reserveOnce.Do(func() { reserveThreads(spareThreads) })
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:     opts,
		log:      log,
		started:  time.Now(),
		pending:  newPendingConns(),
		pokes:    make(chan struct{}, 1),
		ownPorts: map[int]int{},
		held:     map[int]*heldPort{},
	}
	s.events = newHub(s.watch)
	s.handler = s.newHandler()
	return s
}

// ServeConn runs the handshake on conn, then a yamux server session carrying DRPC (or,
// when the daemon asks for it, one file stream operation: see guestproto.StreamFiles). It
// returns when the connection ends (nil) or ctx is done (ctx's error); a failed handshake
// is returned as an error. conn is closed on return. Processes and listeners started by a
// call live as long as that call, whatever happens to other connections.
func (s *Server) ServeConn(ctx context.Context, conn net.Conn) error {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	peer, err := guestproto.ServerHandshake(conn, s.opts.Version, features...)
	if !stop() {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("serve guest connection: %w", err)
	}
	s.log.Debug("guest connection", "peer_version", peer.Version, "stream", peer.Stream)
	if peer.Stream == guestproto.StreamFiles {
		return s.serveFileStream(ctx, conn)
	}

	sess, err := yamux.Server(conn, guestproto.YamuxConfig())
	if err != nil {
		return fmt.Errorf("serve guest connection: yamux: %w", err)
	}
	defer sess.Close()
	// Closing the session ends every call of this connection; calls of other
	// connections, and what they started, are unaffected.
	stopSess := context.AfterFunc(ctx, func() { sess.Close() })
	defer stopSess()

	// Each call comes on a yamux stream of its own (see guestpb).
	srv := drpcserver.NewWithOptions(s.handler, drpcserver.Options{Manager: guestproto.DRPCOptions()})
	var calls sync.WaitGroup
	var acceptErr error
	for {
		stream, err := sess.AcceptStream()
		if err != nil {
			acceptErr = err
			break
		}
		calls.Go(func() {
			defer stream.Close()
			_ = srv.ServeOne(ctx, stream) // its error is the stream's end
		})
	}
	sess.Close()
	calls.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !isClosedErr(acceptErr) {
		return fmt.Errorf("serve guest connection: %w", acceptErr)
	}
	return nil
}

// Serve accepts connections on ln and serves each with ServeConn until ctx is done or ln
// fails. It closes ln and waits for the connections it served before returning.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			ln.Close()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("guest accept: %w", err)
		}
		wg.Go(func() {
			if err := s.ServeConn(ctx, conn); err != nil && !errors.Is(err, context.Canceled) {
				s.log.Warn("guest connection failed", "err", err)
			}
		})
	}
}

// newHandler is the guest's services, with every error they return sent with its code.
func (s *Server) newHandler() drpc.Handler {
	mux := drpcmux.New()
	for _, err := range []error{
		guestpb.RegisterGuest(mux, infoService{s: s}),
		guestpb.DRPCRegisterEvents(mux, eventsService{s: s}),
		guestpb.DRPCRegisterExec(mux, execService{s: s}),
		guestpb.DRPCRegisterFiles(mux, filesService{s: s}),
		guestpb.DRPCRegisterTunnels(mux, tunnelsService{s: s}),
	} {
		if err != nil {
			panic(err) // a generated service that does not fit drpcmux: a build-time mistake
		}
	}
	return codedHandler{mux}
}

// codedHandler sends every error with its guestproto.Code.
type codedHandler struct{ drpc.Handler }

func (h codedHandler) HandleRPC(stream drpc.Stream, rpc string) error {
	return guestproto.WireError(h.Handler.HandleRPC(stream, rpc))
}

// isClosedErr reports whether err only says that the session or listener was closed,
// the normal end of a connection.
func isClosedErr(err error) bool {
	return errors.Is(err, yamux.ErrSessionShutdown) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, os.ErrClosed)
}
