package cli

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
	root := NewRootCmd(NewFactory(IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}))
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
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	if code := Run(context.Background(), f, []string{"up", "--help"}); code != 0 {
		t.Fatalf("up --help: exit %d: %s", code, out.String())
	}
	if strings.Contains(out.String(), "--backend paddock") || strings.Contains(out.String(), "--context paddock") {
		t.Errorf("up --help shows a command as a value name:\n%s", out.String())
	}
}
