package cli_test

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/servecmd"
)

// upperName is a value name written on purpose, between backquotes: `FILE`, `NAME`.
var upperName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// TestHelpValueNames walks every command's help and checks each flag's value name.
// pflag takes the first backquoted words of a flag's usage as its value name, so a
// usage that quotes a command (`paddock context ls`) prints
// "--context paddock context ls   the daemon to talk to ...". A value name is the
// value's type (string, duration) or an upper-case word; the usage has no backquotes
// left.
func TestHelpValueNames(t *testing.T) {
	f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	f.More = servecmd.Commands
	root := cli.NewRootCmd(f)
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		check := func(fl *pflag.Flag) {
			checked++
			name, usage := pflag.UnquoteUsage(fl)
			plain := *fl
			plain.Usage = strings.ReplaceAll(fl.Usage, "`", "")
			typeName, _ := pflag.UnquoteUsage(&plain)
			if name != typeName && !upperName.MatchString(name) {
				t.Errorf("%s --%s: help shows the value name %q (from backquotes in %q): write the usage without backquotes", c.CommandPath(), fl.Name, name, fl.Usage)
			}
			if strings.Contains(usage, "`") {
				t.Errorf("%s --%s: usage %q keeps backquotes", c.CommandPath(), fl.Name, usage)
			}
		}
		c.LocalFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if checked < 100 {
		t.Fatalf("checked %d flags: the walk missed commands", checked)
	}
	// The help itself, as the user sees it, for one command whose flag had quoted a command.
	var out bytes.Buffer
	f = cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	if code := cli.Run(context.Background(), f, []string{"up", "--help"}); code != 0 {
		t.Fatalf("up --help: exit %d: %s", code, out.String())
	}
	if strings.Contains(out.String(), "--backend paddock") || strings.Contains(out.String(), "--context paddock") {
		t.Errorf("up --help shows a command as a value name:\n%s", out.String())
	}
}

// TestHelpCommands: the full program's `paddock --help` lists the client's commands and
// those that run server code in the process (package servecmd) together, as one tree;
// the hidden ones (guest, backend) still answer.
func TestHelpCommands(t *testing.T) {
	help := func(more func(*cli.Factory) []*cobra.Command, args ...string) string {
		var out bytes.Buffer
		f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
		f.More = more
		if code := cli.Run(context.Background(), f, append(args, "--help")); code != 0 {
			t.Fatalf("%s --help: exit %d: %s", strings.Join(args, " "), code, out.String())
		}
		return out.String()
	}
	// The words that start the lines of the help's command list.
	names := func(help string) []string {
		_, list, _ := strings.Cut(help, "Available Commands:\n")
		list, _, _ = strings.Cut(list, "\n\n")
		var n []string
		for _, l := range strings.Split(list, "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				n = append(n, f[0])
			}
		}
		return n
	}
	full, client := names(help(servecmd.Commands)), names(help(nil))
	for _, want := range append([]string{"serve", "verify", "host"}, client...) {
		if !slices.Contains(full, want) {
			t.Errorf("paddock --help does not list %s: %q", want, full)
		}
	}
	for _, hidden := range []string{"guest", "backend"} {
		if slices.Contains(full, hidden) {
			t.Errorf("paddock --help lists the hidden %s", hidden)
		}
	}
	if h := help(servecmd.Commands, "backend", "serve"); !strings.Contains(h, "--backend string") {
		t.Errorf("backend serve --help:\n%s", h)
	}
	if h := help(servecmd.Commands, "host", "add"); !strings.Contains(h, "--fingerprint string") {
		t.Errorf("host add --help:\n%s", h)
	}
}
