package servecmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/daemon"
	"github.com/paddockhq/paddock/internal/logfile"
)

type serveOptions struct {
	foreground bool
	debug      bool
	logFile    string
}

func newCmdServe(f *cli.Factory) *cobra.Command {
	opts := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon (in the background; --foreground for service managers)",
		Long: `Run the paddock daemon. Every other command starts it on demand, so this is
needed only to start it ahead of time or under a service manager (--foreground).`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.foreground {
				return runServe(cmd.Context(), f, opts)
			}
			_, err := f.Client(cmd.Context())
			return err
		},
	}
	cmd.Flags().BoolVar(&opts.foreground, "foreground", false, "run in the foreground, logging to stderr")
	cmd.Flags().BoolVar(&opts.debug, "debug", false, "log every API request")
	cmd.Flags().StringVar(&opts.logFile, "log-file", "", "with --foreground: log to this file instead of stderr, rotated at 10 MiB keeping 3 older ones (FILE.1 the newest); stdout and stderr go there too")
	return cmd
}

func runServe(ctx context.Context, f *cli.Factory, opts *serveOptions) error {
	p, err := f.Paths()
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if opts.debug {
		level = slog.LevelDebug
	}
	out := f.IO.ErrOut
	if opts.logFile != "" {
		lf, err := logfile.Open(opts.logFile, logfile.Options{Stdio: true})
		if err != nil {
			return err
		}
		defer lf.Close()
		out = lf
	}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level}))
	err = daemon.Run(ctx, daemon.Options{Paths: p, Version: cli.Version, Logger: log})
	if errors.Is(err, daemon.ErrAlreadyRunning) {
		return fmt.Errorf("%w (socket %s); stop it with `paddock daemon stop`", err, p.Socket)
	}
	return err
}
