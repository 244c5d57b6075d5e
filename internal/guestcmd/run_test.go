package guestcmd

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

func runArgs(t *testing.T, args ...string) (stdout string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = Run(t.Context(), IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, "v-test", args)
	if errOut.Len() > 0 {
		t.Errorf("Run(%q) wrote to stderr: %q", args, errOut.String())
	}
	return out.String(), err
}

// TestRunHelp: the guest lists its commands, hidden ones left out, and a command's
// --help gives its usage and flags.
func TestRunHelp(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}, {"help"}} {
		out, err := runArgs(t, args...)
		if err != nil || !strings.Contains(out, "  notify ") || !strings.Contains(out, "  serve ") {
			t.Errorf("Run(%q) = %q, %v; want the list of commands", args, out, err)
		}
		if strings.Contains(out, "vm-init") || strings.Contains(out, "vm-drop") {
			t.Errorf("Run(%q) lists a hidden command: %q", args, out)
		}
	}
	out, err := runArgs(t, "serve", "--help")
	if err != nil || !strings.Contains(out, "Usage: paddock guest serve ") || !strings.Contains(out, "-listen-fd") {
		t.Errorf("serve --help = %q, %v", out, err)
	}
}

// TestRunRefuses: bad command lines are refused before anything runs, with the hint.
func TestRunRefuses(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"nope"}, `unknown command "nope" for ` + "`paddock guest` (see `paddock guest --help`)"},
		{[]string{"ports", "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "--bogus"}, "flag provided but not defined: -bogus (see `paddock guest serve --help`)"},
		{[]string{"serve", "--listen-fd", "x"}, `invalid value "x" for flag -listen-fd`},
		{[]string{"serve"}, "guest serve needs one of --stdio"},
		{[]string{"vm-drop", "--"}, "vm-drop needs the command to run after --"},
	} {
		out, err := runArgs(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || out != "" {
			t.Errorf("Run(%q) = %q, %v; want an error with %q and no output", tt.args, out, err, tt.want)
		}
	}
}

// TestFlagForms: flags take `--name value` and `--name=value`, and --socket repeats.
func TestFlagForms(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var sockets stringList
	fs.Var(&sockets, "socket", "")
	status := fs.String("exit-status", "", "")
	if err := fs.Parse([]string{"--socket", "/a", "--socket=/b", "--exit-status=3", "rest"}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(sockets, " ") != "/a /b" || *status != "3" || strings.Join(fs.Args(), " ") != "rest" {
		t.Errorf("parsed sockets %q, exit status %q, args %q", sockets, *status, fs.Args())
	}
}

// TestHelpValueNames: no flag's usage holds backquoted words, which the flag package
// would print as the flag's value name ("-socket paddock guest serve" for a usage that
// quotes a command).
func TestHelpValueNames(t *testing.T) {
	n := 0
	for _, c := range commands(IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, "v-test") {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.setup(fs)
		fs.VisitAll(func(fl *flag.Flag) {
			n++
			if strings.Contains(fl.Usage, "`") {
				name, _ := flag.UnquoteUsage(fl)
				t.Errorf("guest %s -%s: usage %q has backquotes: help shows %q as its value name", c.name, fl.Name, fl.Usage, name)
			}
		})
	}
	if n < 5 {
		t.Fatalf("checked %d flags: the walk missed commands", n)
	}
}
