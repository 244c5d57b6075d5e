package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api"
	"github.com/paddockhq/paddock/internal/sandbox"
)

// The lifecycle verbs are small enough to share a file: each is a single API call.

type nameOptions struct {
	name  string
	force bool
}

// newCmdStateChange builds start and stop: one API call on one sandbox, then its state.
func newCmdStateChange(f *Factory, use, short string, call func(*api.Client, context.Context, string) (sandbox.Info, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use + " NAME",
		Short: short,
		Args:  exactArgs(1, "one sandbox name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			info, err := call(c, cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: sandbox %s is %s\n", info.Name, info.State)
			return nil
		},
	}
}

func newCmdStart(f *Factory) *cobra.Command {
	return newCmdStateChange(f, "start", "Start a stopped sandbox", (*api.Client).Start)
}

func newCmdStop(f *Factory) *cobra.Command {
	return newCmdStateChange(f, "stop", "Stop a sandbox and every process in it; its workspace is kept", (*api.Client).Stop)
}

func newCmdRm(f *Factory, runF func(context.Context, *nameOptions) error) *cobra.Command {
	opts := &nameOptions{}
	cmd := &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a sandbox and everything in it (-f if it is running)",
		Args:  exactArgs(1, "one sandbox name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			if err := c.Remove(cmd.Context(), opts.name, opts.force); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: removed sandbox %s\n", opts.name)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&opts.force, "force", "f", false, "remove a running sandbox too")
	return cmd
}
