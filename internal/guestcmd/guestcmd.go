// Package guestcmd is the guest's command line: what runs inside every sandbox
// (serve, connect, ports, notify). The paddock CLI has it as `paddock guest` (alias
// `agent`), and the small guest binary (cmd/paddock-guest) is it alone, with none of the
// daemon's and CLI's dependencies: its flags are the standard library's, not cobra's,
// whose templates would cost every sandbox's guest a megabyte.
package guestcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/consolekeep"
	"github.com/paddockhq/paddock/internal/guest"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/portmux"
	"github.com/paddockhq/paddock/internal/stdioconn"
)

// IO are the streams the commands use.
type IO struct {
	In          io.Reader
	Out, ErrOut io.Writer
}

// commands are the guest's commands, in the order its help lists them. version is the
// paddock version the guest reports.
func commands(s IO, version string) []command {
	return []command{
		{name: "serve", usage: "--listen-fd N | --socket PATH... | --stdio | --port-fd N | --mux-listen-fd N [--sandbox NAME]",
			short: "Serve the guest protocol (--listen-fd N, --socket PATH or --stdio)",
			setup: func(fs *flag.FlagSet) runFunc { return serveCommand(fs, s, version) }},
		{name: "connect", usage: "[--socket PATH]",
			short: "Bridge stdin and stdout to the resident guest's unix socket",
			setup: func(fs *flag.FlagSet) runFunc {
				socket := fs.String("socket", inside.GuestSocket, "the resident guest's socket")
				return noArgs(func(context.Context) error {
					// It carries the daemon's connection: nothing inside may trace it either.
					if err := guest.Untraceable(); err != nil {
						return err
					}
					return guest.Bridge(*socket, s.In, s.Out)
				})
			}},
		{name: "ports", short: "List the TCP ports processes of this sandbox listen on, as JSON",
			setup: func(*flag.FlagSet) runFunc {
				return noArgs(func(context.Context) error {
					return json.NewEncoder(s.Out).Encode(guest.Listening("/proc"))
				})
			}},
		newNotify(s),
		newIsolate(s),
		newVMInit(),
		newVMDrop(),
		newNSInit(),
		newConsoleKeep(s),
	}
}

// newConsoleKeep is `console-keep FILE MAX`, which the microvm backend runs on the host
// (the guest binary is its verified copy there) as the reader of a Firecracker VM's
// console: it copies its standard input into FILE, kept under MAX bytes, until the VM
// has ended, whether a daemon runs or not.
func newConsoleKeep(s IO) command {
	return command{name: "console-keep", usage: "FILE MAX", hidden: true,
		short: "Copy standard input into FILE, kept under MAX bytes (a Firecracker VM's console, on the host)",
		setup: func(*flag.FlagSet) runFunc {
			return func(_ context.Context, args []string) error {
				if len(args) != 2 {
					return errors.New("console-keep takes FILE MAX")
				}
				bound, err := strconv.ParseInt(args[1], 10, 64)
				if err != nil {
					return fmt.Errorf("console-keep: MAX %q is not a number of bytes", args[1])
				}
				return consolekeep.Keep(args[0], bound, s.In)
			}
		}}
}

// serveCommand declares serve's flags on fs and returns what runs it.
func serveCommand(fs *flag.FlagSet, s IO, version string) runFunc {
	listenFD := fs.Int("listen-fd", 0, "serve a listening socket inherited on this descriptor")
	var sockets stringList
	fs.Var(&sockets, "socket", "listen on this unix socket (repeatable: each is served alike)")
	portFD := fs.Int("port-fd", 0, "serve the connections multiplexed on a microVM's console port open on this descriptor")
	muxListenFD := fs.Int("mux-listen-fd", 0, "serve a listening socket inherited on this descriptor (a microVM's AF_VSOCK one), each connection a session of multiplexed connections")
	stdio := fs.Bool("stdio", false, "serve one connection on stdin and stdout")
	name := fs.String("sandbox", "", "the sandbox's name, for Info")
	return noArgs(func(ctx context.Context) error {
		if err := guest.Untraceable(); err != nil {
			return err
		}
		// The guest never logs to stdout: with --stdio it is the protocol channel.
		log := slog.New(slog.NewTextHandler(s.ErrOut, nil))
		srv := guest.NewServer(guest.Options{Sandbox: *name, Version: version, Logger: log,
			StatusDir: inside.StatusDir, Workspace: inside.Workspace})
		switch {
		case *stdio:
			return srv.ServeConn(ctx, stdioconn.New(s.In, s.Out))
		case *portFD > 0:
			// A microVM's console port: one stream carrying every connection.
			port := os.NewFile(uintptr(*portFD), "guest-port")
			return portmux.Serve(ctx, port, func(c net.Conn) {
				if err := srv.ServeConn(ctx, c); err != nil && !errors.Is(err, context.Canceled) {
					log.Warn("guest connection failed", "err", err)
				}
			})
		case *muxListenFD > 0:
			// A microVM's vsock listener: each connection one session of connections.
			return serveMuxListener(ctx, *muxListenFD, func(c net.Conn) {
				if err := srv.ServeConn(ctx, c); err != nil && !errors.Is(err, context.Canceled) {
					log.Warn("guest connection failed", "err", err)
				}
			}, log)
		case *listenFD > 0:
			ln, err := net.FileListener(os.NewFile(uintptr(*listenFD), "guest-listener"))
			if err != nil {
				return fmt.Errorf("listen fd %d: %w", *listenFD, err)
			}
			return srv.Serve(ctx, ln)
		case len(sockets) > 0:
			return serveSockets(ctx, srv, sockets)
		}
		return errors.New("guest serve needs one of --stdio, --listen-fd, --port-fd, --mux-listen-fd or --socket")
	})
}

// serveMuxListener accepts connections on a listening socket given as a descriptor,
// whatever its family (Go's net package knows no AF_VSOCK), and serves each as one
// portmux session, until ctx is done.
func serveMuxListener(ctx context.Context, fd int, serve func(net.Conn), log *slog.Logger) error {
	if err := unix.SetNonblock(fd, false); err != nil {
		return fmt.Errorf("mux listen fd %d: %w", fd, err)
	}
	// A blocked accept wakes when the socket is shut down.
	stop := context.AfterFunc(ctx, func() { unix.Shutdown(fd, unix.SHUT_RDWR) })
	defer stop()
	for {
		nfd, _, err := unix.Accept4(fd, unix.SOCK_CLOEXEC)
		if err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNABORTED) {
				continue
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("accept on fd %d: %w", fd, err)
		}
		// Non-blocking: Go's poller serves it, and closing it ends a read in progress.
		unix.SetNonblock(nfd, true)
		conn := os.NewFile(uintptr(nfd), "guest-mux-conn")
		go func() {
			if err := portmux.ServeConn(ctx, conn, serve); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
				log.Warn("guest session failed", "err", err)
			}
		}()
	}
}

// serveSockets listens on each unix socket (replacing a stale one) and serves them all
// until ctx is done or one fails. A docker sandbox's guest has two: one in its /run for
// the exec bridge, one in the directory its daemon reaches from the host.
func serveSockets(ctx context.Context, srv *guest.Server, paths []string) error {
	lns := make([]net.Listener, 0, len(paths))
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		os.Remove(p)
		ln, err := net.Listen("unix", p)
		if err != nil {
			return err
		}
		lns = append(lns, ln)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- srv.Serve(ctx, ln) }()
	}
	err := <-errc
	cancel()
	for range lns[1:] {
		<-errc
	}
	return err
}
