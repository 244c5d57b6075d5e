package guestcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Short describes the guest's commands, for a list of commands.
const Short = "The guest that runs inside every sandbox (serve, connect, ports, notify)"

// A command is one of the guest's: `paddock guest NAME ...`.
type command struct {
	name string
	// usage is what follows the name on the usage line.
	usage  string
	short  string
	hidden bool
	// setup declares the command's flags on fs and returns what runs it with the
	// arguments left after them.
	setup func(fs *flag.FlagSet) runFunc
}

// runFunc runs a command with the arguments its flags left.
type runFunc func(ctx context.Context, args []string) error

// Run runs the guest's command line args: what follows `paddock guest` (or its old
// name, `paddock agent`, which hooks written into sandboxes before the rename and the
// daemon itself still run: see inside.GuestCommand). version is the paddock version
// the guest reports. Flags go before arguments; `--` ends them.
func Run(ctx context.Context, s IO, version string, args []string) error {
	cmds := commands(s, version)
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printHelp(s.Out, cmds)
		return nil
	}
	for _, c := range cmds {
		if c.name != args[0] {
			continue
		}
		fs := flag.NewFlagSet("paddock guest "+c.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard) // a parse error is returned, and printed once by the caller
		run := c.setup(fs)
		fs.Usage = func() {} // printed below for --help only
		if err := fs.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(s.Out, "Usage: paddock guest %s\n\n%s\n", strings.TrimSpace(c.name+" "+c.usage), c.short)
				fs.SetOutput(s.Out)
				fs.PrintDefaults()
				return nil
			}
			return fmt.Errorf("guest %s: %w (see `paddock guest %s --help`)", c.name, err, c.name)
		}
		return run(ctx, fs.Args())
	}
	return fmt.Errorf("unknown command %q for `paddock guest` (see `paddock guest --help`)", args[0])
}

// printHelp lists the commands that are not hidden.
func printHelp(w io.Writer, cmds []command) {
	fmt.Fprintf(w, "%s.\n\nUsage: paddock guest COMMAND [FLAGS] [ARGS]\n\nCommands:\n", Short)
	for _, c := range cmds {
		if !c.hidden {
			fmt.Fprintf(w, "  %-16s %s\n", c.name, c.short)
		}
	}
	fmt.Fprintf(w, "\nRun `paddock guest COMMAND --help` for a command's flags.\n")
}

// noArgs is run for a command that takes no arguments.
func noArgs(run func(ctx context.Context) error) runFunc {
	return func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unexpected argument %q: the command takes flags only", args[0])
		}
		return run(ctx)
	}
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}
