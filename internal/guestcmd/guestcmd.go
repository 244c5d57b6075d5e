// Package guestcmd is the guest's command line: what runs inside every sandbox
// (serve, connect, ports, notify). The paddock CLI has it as `paddock guest` (alias
// `agent`), and the small guest binary (cmd/paddock-guest) is it alone, with none of the
// daemon's and CLI's dependencies.
package guestcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/guest"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/portmux"
)

// IO are the streams the commands use.
type IO struct {
	In          io.Reader
	Out, ErrOut io.Writer
}

// New returns the guest command: what runs inside a sandbox. Its old name, "agent",
// stays as an alias: hooks written into sandboxes before the rename, and the daemon
// itself (see inside.GuestCommand), still run `paddock agent notify` and friends.
// version is the paddock version the guest reports.
func New(s IO, version string) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "guest",
		Aliases: []string{"agent"},
		Short:   "The guest that runs inside every sandbox (serve, connect, ports, notify)",
		Hidden:  true,
	}
	var listenFD, portFD, muxListenFD int
	var socket, name string
	var sockets []string
	var stdio bool
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve the guest protocol (--listen-fd N, --socket PATH or --stdio)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := guest.Untraceable(); err != nil {
				return err
			}
			// The guest never logs to stdout: with --stdio it is the protocol channel.
			log := slog.New(slog.NewTextHandler(s.ErrOut, nil))
			srv := guest.NewServer(guest.Options{Sandbox: name, Version: version, Logger: log,
				StatusDir: inside.StatusDir, Workspace: inside.Workspace})
			ctx := cmd.Context()
			switch {
			case stdio:
				return srv.ServeConn(ctx, stdioConn(s))
			case portFD > 0:
				// A microVM's console port: one stream carrying every connection.
				port := os.NewFile(uintptr(portFD), "guest-port")
				return portmux.Serve(ctx, port, func(c net.Conn) {
					if err := srv.ServeConn(ctx, c); err != nil && !errors.Is(err, context.Canceled) {
						log.Warn("guest connection failed", "err", err)
					}
				})
			case muxListenFD > 0:
				// A microVM's vsock listener: each connection one session of connections.
				return serveMuxListener(ctx, muxListenFD, func(c net.Conn) {
					if err := srv.ServeConn(ctx, c); err != nil && !errors.Is(err, context.Canceled) {
						log.Warn("guest connection failed", "err", err)
					}
				}, log)
			case listenFD > 0:
				ln, err := net.FileListener(os.NewFile(uintptr(listenFD), "guest-listener"))
				if err != nil {
					return fmt.Errorf("listen fd %d: %w", listenFD, err)
				}
				return srv.Serve(ctx, ln)
			case len(sockets) > 0:
				return serveSockets(ctx, srv, sockets)
			}
			return errors.New("guest serve needs one of --stdio, --listen-fd, --port-fd, --mux-listen-fd or --socket")
		},
	}
	serve.Flags().IntVar(&listenFD, "listen-fd", 0, "serve a listening socket inherited on this descriptor")
	serve.Flags().StringArrayVar(&sockets, "socket", nil, "listen on this unix socket (repeatable: each is served alike)")
	serve.Flags().IntVar(&portFD, "port-fd", 0, "serve the connections multiplexed on a microVM's console port open on this descriptor")
	serve.Flags().IntVar(&muxListenFD, "mux-listen-fd", 0, "serve a listening socket inherited on this descriptor (a microVM's AF_VSOCK one), each connection a session of multiplexed connections")
	serve.Flags().BoolVar(&stdio, "stdio", false, "serve one connection on stdin and stdout")
	serve.Flags().StringVar(&name, "sandbox", "", "the sandbox's name, for Info")

	connect := &cobra.Command{
		Use:   "connect",
		Short: "Bridge stdin and stdout to the resident guest's unix socket",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// It carries the daemon's connection: nothing inside may trace it either.
			if err := guest.Untraceable(); err != nil {
				return err
			}
			return guest.Bridge(socket, s.In, s.Out)
		},
	}
	connect.Flags().StringVar(&socket, "socket", inside.Run+"/agent.sock", "the resident guest's socket")
	ports := &cobra.Command{
		Use:   "ports",
		Short: "List the TCP ports processes of this sandbox listen on, as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return json.NewEncoder(s.Out).Encode(guest.Listening("/proc"))
		},
	}
	cmd.AddCommand(serve, connect, ports, newNotify(s), newIsolate(s), newVMInit(s), newVMDrop(s))
	return cmd
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
