package servecmd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/sshhost"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/logfile"
)

// hostBackends are the backends a host serves a daemon's sandboxes with, best first:
// those whose description says so (bwrap, then docker), in the order of defaults.
func hostBackends() []string {
	names := backend.NamesWhere(func(d backend.Description) bool { return d.Serves })
	backend.SortByDefault(names, func(n string) backend.Description { d, _ := backend.Registered(n); return d })
	return names
}

// serveChoices says, for --backend's help, what a host may serve: "auto (bwrap where it
// works, else docker), bwrap or docker".
func serveChoices() string {
	names := hostBackends()
	if len(names) == 0 {
		return "auto"
	}
	return "auto (" + strings.Join(names, " where it works, else ") + "), " +
		backend.Which(func(d backend.Description) bool { return d.Serves })
}

// newCmdBackend is the host's side of the ssh backend: the daemon of another machine runs
// `paddock backend serve` over SSH and speaks to it on stdin and stdout.
func newCmdBackend(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "backend", Short: "Serve this machine's sandboxes to another machine's daemon", Hidden: true}
	var name string
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve a backend on stdin and stdout (run by a daemon over SSH, never by hand)",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := f.Paths()
			if err != nil {
				return err
			}
			if err := p.MkdirAll(); err != nil {
				return err
			}
			cfg, err := config.Load(p.Config)
			if err != nil {
				return err
			}
			logs, err := logfile.Open(filepath.Join(p.State, "backend-serve.log"), logfile.Options{})
			if err != nil {
				return err
			}
			defer logs.Close()
			log := slog.New(slog.NewTextHandler(logs, nil))
			names := hostBackends()
			if name != "auto" {
				names = []string{name}
			}
			var chosen backend.Backend
			var reasons []error
			for _, n := range names {
				if n == sshhost.Name {
					return cli.Usagef("a host serves its own sandboxes: --backend %s is not one of them", n)
				}
				b, err := backend.New(n, backend.Env{Dir: filepath.Join(p.Sandboxes, n), Options: cfg.Backends[n],
					ConfigDir: configDir(p), Hide: []string{configDir(p), config.SystemConfigDir}})
				if err == nil {
					err = b.Available(cmd.Context())
				}
				if err != nil {
					reasons = append(reasons, err)
					continue
				}
				chosen = b
				break
			}
			if c, ok := chosen.(backend.Closer); ok {
				defer c.Close()
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			log.Info("serving a daemon", "backend", name, "chosen", chosen != nil, "pid", os.Getpid())
			err = sshhost.Serve(cmd.Context(), stdio{f.IO.In, f.IO.Out}, sshhost.ServeOptions{Backend: chosen, Unusable: errors.Join(reasons...),
				GuestDir: filepath.Join(p.Cache, "agent"), Self: self, Version: cli.Version, Log: log})
			if err != nil {
				return fmt.Errorf("backend serve: %w", err)
			}
			return nil
		},
	}
	serve.Flags().StringVar(&name, "backend", "auto", "the backend to serve: "+serveChoices())
	cmd.AddCommand(serve)
	return cmd
}

// stdio is a command's stdin and stdout as one stream.
type stdio struct {
	io.Reader
	io.Writer
}

func (stdio) Close() error { return nil }
