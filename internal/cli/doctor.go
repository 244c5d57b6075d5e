package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

type doctorOptions struct {
	json bool
}

func newCmdDoctor(f *Factory, runF func(context.Context, *doctorOptions) error) *cobra.Command {
	opts := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Say which backends work here, and how to fix those that don't",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDoctor(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func runDoctor(ctx context.Context, f *Factory, opts *doctorOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	reports, err := c.Doctor(ctx)
	if err != nil {
		return err
	}
	if opts.json {
		enc := json.NewEncoder(f.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(reports)
	}
	anyOK := false
	for _, r := range reports {
		if r.Available {
			anyOK = true
			def := ""
			if r.Default {
				def = " (default)"
			}
			fmt.Fprintf(f.IO.Out, "ok       %s%s\n", r.Name, def)
			continue
		}
		fmt.Fprintf(f.IO.Out, "missing  %s: %s\n", r.Name, r.Reason)
		if r.Fix != "" {
			fmt.Fprintf(f.IO.Out, "         fix: %s\n", r.Fix)
		}
	}
	if !anyOK {
		return &exitError{5}
	}
	return nil
}
