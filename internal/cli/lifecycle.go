package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// The lifecycle verbs are small enough to share a file: each is a single API call.

type nameOptions struct {
	name  string
	force bool
}

func newCmdStart(f *Factory, runF func(context.Context, *nameOptions) error) *cobra.Command {
	opts := &nameOptions{}
	return &cobra.Command{
		Use:   "start NAME",
		Short: "Start a stopped sandbox",
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
			info, err := c.Start(cmd.Context(), opts.name)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: sandbox %s is %s\n", info.Name, info.State)
			return nil
		},
	}
}

func newCmdStop(f *Factory, runF func(context.Context, *nameOptions) error) *cobra.Command {
	opts := &nameOptions{}
	return &cobra.Command{
		Use:   "stop NAME",
		Short: "Stop a sandbox and every process in it; its workspace is kept",
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
			info, err := c.Stop(cmd.Context(), opts.name)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: sandbox %s is %s\n", info.Name, info.State)
			return nil
		},
	}
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
