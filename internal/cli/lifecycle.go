package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/termtext"
)

// The lifecycle verbs are small enough to share a file: each is a single API call.

type nameOptions struct {
	name  string
	force bool
	// purge: rm without a final snapshot.
	purge bool
}

// newCmdStateChange builds start and stop: one API call on one sandbox, then its state.
func newCmdStateChange(f *Factory, use, short string, call func(*client.Client, context.Context, string) (wire.SandboxInfo, error)) *cobra.Command {
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
			for _, s := range info.Resumed {
				fmt.Fprintf(f.IO.ErrOut, "paddock: resumed session %s/%s\n", info.Name, termtext.Escape(s))
			}
			if info.Detail != "" {
				fmt.Fprintf(f.IO.ErrOut, "paddock: %s %s\n", info.Name, termtext.Escape(info.Detail))
			}
			return nil
		},
	}
}

func newCmdStart(f *Factory) *cobra.Command {
	return newCmdStateChange(f, "start", "Start a stopped sandbox, or resume a suspended one", (*client.Client).Start)
}

func newCmdStop(f *Factory) *cobra.Command {
	var suspend bool
	cmd := newCmdStateChange(f, "stop", "Stop a sandbox and every process in it; its workspace is kept",
		func(c *client.Client, ctx context.Context, name string) (wire.SandboxInfo, error) {
			if suspend {
				return c.Suspend(ctx, name)
			}
			return c.Stop(ctx, name)
		})
	cmd.Use = "stop NAME [--suspend]"
	cmd.Long = `Stop a sandbox and every process in it; its workspace is kept.

With --suspend, its memory is kept too: the sandbox is paused and saved, and paddock start
resumes its processes where they were (a microVM under QEMU; other backends refuse it,
changing nothing). paddock stop on a suspended sandbox drops the saved memory.`
	cmd.Flags().BoolVar(&suspend, "suspend", false, "keep the sandbox's memory, for start to resume its processes")
	return cmd
}

func newCmdRm(f *Factory) *cobra.Command {
	opts := &nameOptions{}
	cmd := &cobra.Command{
		Use:   "rm NAME [-f] [--purge]",
		Short: "Remove a sandbox and everything in it, after a final snapshot (-f if it is running)",
		Long: `Remove a sandbox and everything in it. A final snapshot is taken first (a stopped
sandbox is started for it), so that paddock restore can bring it back; --purge removes it
without one. A sandbox its backend lost is removed as it is: its earlier snapshots stay.`,
		Args: exactArgs(1, "one sandbox name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.name = args[0]
			return runRm(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.force, "force", "f", false, "remove a running sandbox too")
	cmd.Flags().BoolVar(&opts.purge, "purge", false, "remove it without a final snapshot")
	return cmd
}

func runRm(ctx context.Context, f *Factory, opts *nameOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	progress := func(step string) { fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", step) }
	m, err := c.Remove(ctx, opts.name, wire.RemoveRequest{Force: opts.force, Purge: opts.purge}, progress)
	if err != nil {
		return err
	}
	if m != nil {
		fmt.Fprintf(f.IO.ErrOut, "paddock: final snapshot %s (%s); `paddock restore %s` brings it back\n", m.ID, termtext.Size(m.Size), m.ID)
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: removed sandbox %s\n", opts.name)
	return nil
}
