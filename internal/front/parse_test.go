package front

import (
	"reflect"
	"testing"
)

// TestParse: the front serves exactly the lines it reads the way the full program's
// flags do, and hands over every other (ok false), so no line changes meaning.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want line
		ok   bool
	}{
		{[]string{"paddock", "--version"}, line{version: true}, true},
		{[]string{"paddock", "-v"}, line{version: true}, true},
		{[]string{"paddock", "--context", "work", "--version"}, line{version: true}, true},
		{[]string{"paddock", "--version", "extra"}, line{}, false},
		{[]string{"paddock", "exec", "r", "--", "true"}, line{exec: Exec{Name: "r", Argv: []string{"true"}}}, true},
		{[]string{"paddock", "exec", "r", "ls", "-la"}, line{exec: Exec{Name: "r", Argv: []string{"ls", "-la"}}}, true},
		// After the name everything is the command's, flags and "--" too.
		{[]string{"paddock", "exec", "r", "--", "sh", "--", "-t"}, line{exec: Exec{Name: "r", Argv: []string{"sh", "--", "-t"}}}, true},
		{[]string{"/usr/bin/paddock", "--context=work", "exec", "-t", "-e", "A=1", "--env=B=2", "--env", "C=3", "-w", "/tmp", "--workdir=/w", "--non-interactive", "r", "--", "bash"},
			line{context: "work", exec: Exec{Name: "r", Argv: []string{"bash"}, Env: []string{"A=1", "B=2", "C=3"}, Dir: "/w", TTY: true}}, true},
		{[]string{"paddock", "exec", "--context", "work", "r", "true"}, line{context: "work", exec: Exec{Name: "r", Argv: []string{"true"}}}, true},
		{[]string{"paddock", "shell", "r"}, line{exec: Exec{Name: "r", Argv: []string{"bash", "-l"}, TTY: true, Shell: true}}, true},
		{[]string{"paddock", "--non-interactive", "shell", "--context", "c", "r"}, line{context: "c", exec: Exec{Name: "r", Argv: []string{"bash", "-l"}, TTY: true, Shell: true}}, true},
		{[]string{"paddock", "sync", "r"}, line{sync: &syncLine{name: "r"}}, true},
		{[]string{"paddock", "sync", "r", "--json"}, line{sync: &syncLine{name: "r", json: true}}, true},
		{[]string{"paddock", "--context", "c", "sync", "--json", "--non-interactive", "r"}, line{context: "c", sync: &syncLine{name: "r", json: true}}, true},
		{[]string{"paddock", "sync", "r", "--context=c"}, line{context: "c", sync: &syncLine{name: "r"}}, true},
		{[]string{"paddock", "sync"}, line{sync: &syncLine{}}, true},
		{[]string{"paddock", "sync", "--json"}, line{sync: &syncLine{json: true}}, true},
		{[]string{"paddock", "ls"}, line{ls: true}, true},
		{[]string{"paddock", "--context", "c", "list", "--non-interactive"}, line{context: "c", ls: true}, true},
		{[]string{"paddock", "ls", "--context=c"}, line{context: "c", ls: true}, true},

		// Handed over: what only the full program answers (help, usage errors, other
		// commands, flags the front does not read, git's helper name).
		{[]string{"paddock"}, line{}, false},
		{[]string{"paddock", "version"}, line{}, false},
		// ls: --json, --all-contexts, help, an argument.
		{[]string{"paddock", "ls", "--json"}, line{}, false},
		{[]string{"paddock", "ls", "--all-contexts"}, line{}, false},
		{[]string{"paddock", "ls", "--help"}, line{}, false},
		{[]string{"paddock", "ls", "r"}, line{}, false},
		{[]string{"paddock", "ls", "--context"}, line{}, false},
		{[]string{"paddock", "exec", "--help"}, line{}, false},
		{[]string{"paddock", "exec", "-h", "r", "true"}, line{}, false},
		{[]string{"paddock", "exec", "r"}, line{}, false},
		{[]string{"paddock", "exec", "r", "--"}, line{}, false},
		{[]string{"paddock", "exec", "--", "r", "true"}, line{}, false},
		{[]string{"paddock", "exec", "-te", "A=1", "r", "true"}, line{}, false},
		{[]string{"paddock", "exec", "-eA=1", "r", "true"}, line{}, false},
		{[]string{"paddock", "exec", "-e"}, line{}, false},
		{[]string{"paddock", "exec", "--tty=false", "r", "true"}, line{}, false},
		{[]string{"paddock", "exec", "--user", "x", "r", "true"}, line{}, false},
		{[]string{"paddock", "--context"}, line{}, false},
		{[]string{"paddock", "shell"}, line{}, false},
		{[]string{"paddock", "shell", "r", "extra"}, line{}, false},
		{[]string{"paddock", "shell", "--help"}, line{}, false},
		// sync: --files, --mode, --history, help.
		{[]string{"paddock", "sync", "r", "--files", "out"}, line{}, false},
		{[]string{"paddock", "sync", "r", "--mode", "on-commit"}, line{}, false},
		{[]string{"paddock", "sync", "r", "--history"}, line{}, false},
		{[]string{"paddock", "sync", "--help"}, line{}, false},
		{[]string{"paddock", "sync", "r", "s"}, line{}, false},
		{[]string{"paddock", "sync", "--json=false", "r"}, line{}, false},
		{[]string{"paddock", "sync", "--", "r"}, line{}, false},
		{[]string{"paddock", "sync", "r", "--context"}, line{}, false},
		{[]string{"git-remote-paddock", "origin", "paddock::r"}, line{}, false},
		{[]string{"/home/me/bin/git-remote-paddock", "--version"}, line{}, false},
	} {
		got, ok := parse(tc.args)
		if ok != tc.ok || (ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("parse(%q) = %+v, %v; want %+v, %v", tc.args, got, ok, tc.want, tc.ok)
		}
	}
}
