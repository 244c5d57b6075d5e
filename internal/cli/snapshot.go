package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/termtext"
)

type snapshotOptions struct {
	note   string
	dryRun bool
	json   bool
}

func newCmdSnapshot(f *Factory) *cobra.Command {
	opts := &snapshotOptions{}
	cmd := &cobra.Command{
		Use:   "snapshot SANDBOX [--note TEXT] [--dry-run]",
		Short: "Snapshot a sandbox into the [backup] store: its repository, uncommitted work, deliverables, conversations and sessions",
		Long: `Snapshot a running sandbox into the store of the config's [backup] section (a
directory, by default in paddock's state directory, or an S3 bucket): every git ref, the
uncommitted and untracked work, the file modes, /workspace/deliverables whole, every
agent's conversations, and the sessions. Files git ignores (dependencies, build
outputs) and new files over max_file_mb are left out, as is what would take the
directories kept whole (deliverables, conversations) past max_whole_mb; the snapshot
names what it left out for its size, and --dry-run lists what would go in and what is
left out, and why. Content already in the store is not sent again.

Restore it, on any backend, with paddock restore.`,
		Args: exactArgs(1, "one sandbox"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSnapshot(cmd.Context(), f, args[0], opts)
		},
	}
	cmd.Flags().StringVar(&opts.note, "note", "", "a note kept with the snapshot")
	cmd.Flags().BoolVar(&opts.dryRun, "dry-run", false, "list what would go in and what is left out; write nothing")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the snapshot's manifest as JSON")
	return cmd
}

func runSnapshot(ctx context.Context, f *Factory, name string, opts *snapshotOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	progress := func(step string) { fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", step) }
	if opts.json {
		progress = nil
	}
	m, err := c.TakeSnapshot(ctx, name, wire.SnapshotRequest{Note: opts.note, DryRun: opts.dryRun}, progress)
	if err != nil {
		return err
	}
	if opts.json {
		return writeJSON(f, m)
	}
	if opts.dryRun {
		fmt.Fprintln(f.IO.Out, "would keep: the repository (every ref) and the uncommitted and untracked work of /workspace")
		for _, r := range m.Roots {
			fmt.Fprintf(f.IO.Out, "would keep: %s (whole)\n", termtext.Escape(r))
		}
		for _, s := range m.Sessions {
			fmt.Fprintf(f.IO.Out, "would keep: session %s (%s)\n", termtext.Escape(s.Name), s.Agent)
		}
		for _, l := range m.Included {
			fmt.Fprintf(f.IO.Out, "would keep: %s: %s\n", termtext.Escape(l.Path), termtext.Escape(l.Why))
		}
		for _, l := range m.Left {
			fmt.Fprintf(f.IO.Out, "left out:   %s: %s\n", termtext.Escape(l.Path), termtext.Escape(l.Why))
		}
		return nil
	}
	for _, l := range m.Left {
		if l.OverLimit { // what the repository's or the user's rules leave out goes unsaid
			fmt.Fprintf(f.IO.ErrOut, "paddock: left out: %s: %s\n", termtext.Escape(l.Path), termtext.Escape(l.Why))
		}
	}
	fmt.Fprintf(f.IO.Out, "%s\n", m.ID)
	fmt.Fprintf(f.IO.ErrOut, "paddock: snapshot %s of %s: %s (%s new) in %.1fs: %d ref(s), %d file(s) kept whole, %d session(s)\n",
		m.ID, m.Sandbox, termtext.Size(m.Size), termtext.Size(m.Uploaded), float64(m.TookMS)/1000, len(m.Git.Refs), countFiles(m), len(m.Sessions))
	return nil
}

func countFiles(m *wire.SnapshotManifest) int {
	n := 0
	for _, f := range m.Files {
		if f.Type == "f" {
			n++
		}
	}
	return n
}

type snapshotsOptions struct {
	json, prune bool
}

func newCmdSnapshots(f *Factory) *cobra.Command {
	opts := &snapshotsOptions{}
	cmd := &cobra.Command{
		Use:   "snapshots [SANDBOX] [--json] [--prune]",
		Short: "List snapshots, newest first: ID SANDBOX AGE SIZE SESSIONS NOTE",
		Long: `List the snapshots in the [backup] store, newest first, of one sandbox or all.
--prune applies the retention now (keep, max_age): older snapshots go, and the content
no snapshot needs any more.`,
		Args: maxArgs(1, "at most one sandbox"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return runSnapshots(cmd.Context(), f, name, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	cmd.Flags().BoolVar(&opts.prune, "prune", false, "apply the retention now, then list")
	return cmd
}

func runSnapshots(ctx context.Context, f *Factory, name string, opts *snapshotsOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	if opts.prune {
		removed, err := c.PruneSnapshots(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: pruned %d snapshot(s)\n", len(removed))
	}
	list, err := c.Snapshots(ctx, name)
	if err != nil {
		return err
	}
	tw, err := listing(f, opts.json, list, "no snapshots yet: take one with `paddock snapshot SANDBOX`",
		"ID\tSANDBOX\tAGE\tSIZE\tSESSIONS\tNOTE")
	if tw == nil {
		return err
	}
	for _, m := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", m.ID, termtext.Escape(m.Sandbox), termtext.Age(time.Since(m.Created)),
			termtext.Size(m.Size), len(m.Sessions), termtext.Escape(m.Note))
	}
	return tw.Flush()
}

type restoreOptions struct {
	backend, name string
}

func newCmdRestore(f *Factory) *cobra.Command {
	opts := &restoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore SNAPSHOT [--backend NAME] [--name NEW]",
		Short: "Make a new sandbox from a snapshot (an id, or a sandbox's name for its newest), its sessions resumed",
		Long: `Make a new sandbox from a snapshot, on its backend or another (--backend): the
repository with every ref, the uncommitted work in the working tree as it was, the file
modes, deliverables and the agents' conversations; then each session starts again,
resuming its conversation. SNAPSHOT is an id from paddock snapshots, or a sandbox's
name for its newest snapshot. The new sandbox takes the snapshot's sandbox's name
unless --name gives another.`,
		Args: exactArgs(1, "one snapshot"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRestore(cmd.Context(), f, args[0], opts)
		},
	}
	cmd.Flags().StringVar(&opts.backend, "backend", "", "the new sandbox's backend (default: the snapshot's)")
	cmd.Flags().StringVar(&opts.name, "name", "", "the new sandbox's name (default: the snapshot's sandbox's)")
	return cmd
}

func runRestore(ctx context.Context, f *Factory, ref string, opts *restoreOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	m, err := c.RestoreSnapshot(ctx, ref, wire.RestoreRequest{Backend: opts.backend, Name: opts.name},
		func(step string) { fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", step) })
	if err != nil {
		return err
	}
	name := opts.name
	if name == "" {
		name = m.Sandbox
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: restored %s as %s in %.1fs; attach with `paddock chat %s`\n", m.ID, name, time.Since(start).Seconds(), name)
	return nil
}
