package cli

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/guest"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/session"
)

// newCmdGuest holds the guest side: what runs inside a sandbox. Its old name, "agent",
// stays as an alias: hooks written into sandboxes before the rename, and the daemon
// itself (see inside.GuestCommand), still run `paddock agent notify` and friends.
func newCmdGuest(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "guest",
		Aliases: []string{"agent"},
		Short:   "The guest that runs inside every sandbox (serve, connect, ports, notify)",
		Hidden:  true,
	}
	var listenFD int
	var socket, name string
	var stdio bool
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve the guest protocol (--listen-fd N, --socket PATH or --stdio)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := guest.Untraceable(); err != nil {
				return err
			}
			// The guest never logs to stdout: with --stdio it is the protocol channel.
			log := slog.New(slog.NewTextHandler(f.IO.ErrOut, nil))
			srv := guest.NewServer(guest.Options{Sandbox: name, Version: Version, Logger: log,
				StatusDir: session.StatusDir, Workspace: session.Workdir})
			ctx := cmd.Context()
			switch {
			case stdio:
				return srv.ServeConn(ctx, stdioConn(f.IO))
			case listenFD > 0:
				ln, err := net.FileListener(os.NewFile(uintptr(listenFD), "guest-listener"))
				if err != nil {
					return fmt.Errorf("listen fd %d: %w", listenFD, err)
				}
				return srv.Serve(ctx, ln)
			case socket != "":
				if err := os.MkdirAll(filepath.Dir(socket), 0o755); err != nil {
					return err
				}
				os.Remove(socket)
				ln, err := net.Listen("unix", socket)
				if err != nil {
					return err
				}
				return srv.Serve(ctx, ln)
			}
			return usagef("guest serve needs one of --stdio, --listen-fd or --socket")
		},
	}
	serve.Flags().IntVar(&listenFD, "listen-fd", 0, "serve a listening socket inherited on this descriptor")
	serve.Flags().StringVar(&socket, "socket", "", "listen on this unix socket")
	serve.Flags().BoolVar(&stdio, "stdio", false, "serve one connection on stdin and stdout")
	serve.Flags().StringVar(&name, "sandbox", "", "the sandbox's name, for Info")

	connect := &cobra.Command{
		Use:   "connect",
		Short: "Bridge stdin and stdout to the resident guest's unix socket",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// It carries the daemon's connection: nothing inside may trace it either.
			if err := guest.Untraceable(); err != nil {
				return err
			}
			return guest.Bridge(socket, f.IO.In, f.IO.Out)
		},
	}
	connect.Flags().StringVar(&socket, "socket", inside.Run+"/agent.sock", "the resident guest's socket")
	ports := &cobra.Command{
		Use:   "ports",
		Short: "List the TCP ports processes of this sandbox listen on, as JSON",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return json.NewEncoder(f.IO.Out).Encode(guest.Listening("/proc"))
		},
	}
	cmd.AddCommand(serve, connect, ports, newCmdGuestNotify(f))
	return cmd
}
