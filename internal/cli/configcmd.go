package cli

import (
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/config"
)

func newCmdConfig(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Read and change the config file (its comments kept)",
		Long: `Read and change this machine's config file, keeping its comments and layout. Keys are dotted:
default_backend, backends.kubernetes.namespace, run.provider. A value is TOML (512, true, ["a"]),
or taken as a string. A change that would not load (an unknown key, a value of the wrong kind) is
refused and the file left as it was. The daemon reads the file when it starts: restart it
(paddock daemon stop; the next command starts it) for a change to take effect.`,
	}
	path := func() (string, error) {
		p, err := f.Paths()
		return p.Config, err
	}
	var jsonOut bool
	get := &cobra.Command{
		Use:   "get KEY",
		Short: "Print one setting's value, as TOML",
		Args:  exactArgs(1, "a key"),
		RunE: func(cmd *cobra.Command, args []string) error {
			all, err := configSettings(path)
			if err != nil {
				return err
			}
			for _, kv := range all {
				if kv[0] == args[0] {
					fmt.Fprintln(f.IO.Out, kv[1])
					return nil
				}
			}
			return apperr.NotFound("see `paddock config ls`; a setting not in the file has its default (docs/configuration.md lists them)", "the config file sets no %s", args[0])
		},
	}
	set := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set one setting, keeping the file's comments",
		Args:  exactArgs(2, "a key and a value"),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, err := path()
			if err != nil {
				return err
			}
			v, err := config.Edit(file, args[0], args[1])
			if err != nil {
				return apperr.Invalid("", "%v", err)
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: %s = %s in %s; the daemon reads it when it starts (paddock daemon stop)\n", args[0], v, file)
			return nil
		},
	}
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List what the config file sets: KEY VALUE",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			all, err := configSettings(path)
			if err != nil {
				return err
			}
			if jsonOut {
				m := map[string]string{}
				for _, kv := range all {
					m[kv[0]] = kv[1]
				}
				return writeJSON(f, m)
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			for _, kv := range all {
				fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
			}
			return tw.Flush()
		},
	}
	ls.Flags().BoolVar(&jsonOut, "json", false, "print JSON: key to its value as TOML")
	cmd.AddCommand(get, set, ls)
	return cmd
}

// configSettings reads the config file's settings; none when there is no file.
func configSettings(path func() (string, error)) ([][2]string, error) {
	file, err := path()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	all, err := config.Settings(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", file, err)
	}
	return all, nil
}
