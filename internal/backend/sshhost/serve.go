package sshhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/hashicorp/yamux"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/guestproto"
)

// ServeOptions configure Serve, the host's side of the wire.
type ServeOptions struct {
	// Backend runs the host's sandboxes; nil when none can (Unusable says why).
	Backend  backend.Backend
	Unusable error
	// GuestDir is where guest binaries the daemon sends are kept, by sha256.
	GuestDir string
	// Self is this executable: the guest of sandboxes whose daemon sends none (a host of
	// another architecture than the daemon's).
	Self    string
	Version string
	Log     *slog.Logger
}

// Serve answers a daemon's calls on rw (the SSH session's stdin and stdout) until the
// daemon goes; sandboxes keep running after it returns.
func Serve(ctx context.Context, rw io.ReadWriteCloser, opts ServeOptions) error {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	h := hello{Magic: Magic, Protocol: Protocol, Version: opts.Version}
	if opts.Backend == nil {
		h.Error = toWire(opts.Unusable)
		if h.Error == nil {
			h.Error = &wireError{Message: "no backend can run sandboxes here"}
		}
		return writeLine(rw, h)
	}
	h.Backend = opts.Backend.Name()
	if err := writeLine(rw, h); err != nil {
		return err
	}
	sess, err := yamux.Server(rw, guestproto.YamuxConfig())
	if err != nil {
		return err
	}
	defer sess.Close()
	s := &server{opts: opts}
	for {
		st, err := sess.AcceptStreamWithContext(ctx)
		if err != nil {
			return nil // the daemon went: its connection is all this process is for
		}
		go s.handle(ctx, st)
	}
}

type server struct {
	opts ServeOptions
	mu   sync.Mutex // guest binaries being written
}

func (s *server) handle(ctx context.Context, st net.Conn) {
	defer st.Close()
	var req request
	if err := readLine(st, &req); err != nil {
		return
	}
	b := s.opts.Backend
	var resp response
	var err error
	switch req.Op {
	case opAvailable:
		err = b.Available(ctx)
	case opCreate:
		if req.Spec == nil {
			err = errors.New("create without a spec")
			break
		}
		if err = s.guestFor(req.Spec); err == nil {
			err = b.Create(ctx, *req.Spec)
		}
	case opStart:
		err = b.Start(ctx, req.ID)
	case opStop:
		err = b.Stop(ctx, req.ID)
	case opDestroy:
		err = b.Destroy(ctx, req.ID)
	case opState:
		var st backend.Status
		st, err = b.State(ctx, req.ID)
		resp.Status = &st
	case opLimits:
		lr, ok := b.(backend.LimitReader)
		if !ok || !b.Describe().Limits {
			err = &backend.LimitsNotEnforcedError{Reason: "backend " + b.Name() + " enforces no limits", Fix: "use a backend that does"}
			break
		}
		var l backend.Limits
		l, err = lr.Limits(ctx, req.ID)
		resp.Limits = &l
	case opExpect:
		e := backend.ExpectOf(ctx, b, req.Runtime)
		resp.Expect = &e
	case opLeftovers:
		if lo, ok := b.(interface{ Leftovers(backend.ID) []string }); ok {
			resp.Left = lo.Leftovers(req.ID)
		}
	case opDial:
		s.dial(ctx, st, req.ID)
		return
	case opPutGuest:
		s.putGuest(st, req)
		return
	default:
		err = fmt.Errorf("unknown call %q (the daemon's paddock is newer than this host's)", req.Op)
	}
	resp.Err = toWire(err)
	if err != nil {
		resp.Status, resp.Limits = nil, nil
	}
	writeLine(st, resp)
}

// dial joins the stream to a new connection to the sandbox's guest.
func (s *server) dial(ctx context.Context, st net.Conn, id backend.ID) {
	conn, err := s.opts.Backend.Dial(ctx, id)
	if err != nil {
		writeLine(st, response{Err: toWire(err)})
		return
	}
	defer conn.Close()
	if writeLine(st, response{}) != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(conn, st); done <- struct{}{} }()
	go func() { io.Copy(st, conn); done <- struct{}{} }()
	<-done // either side's end ends both
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// guestPath is where the host keeps the guest binary of a sha256.
func (s *server) guestPath(sum string) string {
	return filepath.Join(s.opts.GuestDir, "paddock-"+sum)
}

// putGuest keeps the daemon's guest binary, asking for its bytes only when the host
// lacks it, and checks their sha256 before it is used.
func (s *server) putGuest(st net.Conn, req request) {
	if !sha256RE.MatchString(req.SHA256) || req.Size <= 0 {
		writeLine(st, response{Err: &wireError{Message: "put-guest needs a sha256 and a size"}})
		return
	}
	path := s.guestPath(req.SHA256)
	s.mu.Lock()
	defer s.mu.Unlock()
	if sum, err := backend.FileSHA256(path); err == nil && sum == req.SHA256 {
		writeLine(st, response{Path: path})
		return
	}
	if writeLine(st, response{Send: true}) != nil {
		return
	}
	err := writeChecked(path, io.LimitReader(st, req.Size), req.SHA256)
	writeLine(st, response{Path: path, Err: toWire(err)})
}

// guestFor points the spec at a guest binary of this host: the one the daemon sent, or,
// when it sent none, this executable.
func (s *server) guestFor(spec *backend.Spec) error {
	spec.Placement, spec.Source = nil, ""
	if spec.GuestBinary != "" {
		if !sha256RE.MatchString(spec.GuestSHA256) || spec.GuestBinary != s.guestPath(spec.GuestSHA256) {
			return errors.New("the guest binary must be one sent with put-guest")
		}
		return nil
	}
	sum, err := backend.FileSHA256(s.opts.Self)
	if err != nil {
		return fmt.Errorf("this paddock as the guest: %w", err)
	}
	path := s.guestPath(sum)
	s.mu.Lock()
	defer s.mu.Unlock()
	if have, err := backend.FileSHA256(path); err != nil || have != sum {
		f, err := os.Open(s.opts.Self)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := writeChecked(path, f, sum); err != nil {
			return err
		}
	}
	spec.GuestBinary, spec.GuestSHA256 = path, sum
	return nil
}

// writeChecked writes r to path (mode 0755) through a temporary file renamed into place
// only when its sha256 is want.
func writeChecked(path string, r io.Reader, want string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".guest-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("receive the guest binary: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("the guest binary arrived with sha256 %s, want %s", got, want)
	}
	if err := os.Chmod(f.Name(), 0o755); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
