// Package front is the lean CLI: the program installed as `paddock`. It serves itself
// the commands that must start fast (`--version`, `exec`, `shell`, `ls`, and `sync`,
// which is mostly process starts), linking only the API's wire client and git's side of
// a sync, and hands every other command line, whole and unchanged, to the
// full program installed beside it (paddock-full: every command, the daemon, the TUI).
// In one Go binary every linked package initialises before main whatever the command,
// and the full program's packages (the Docker, Kubernetes, S3 and model clients,
// SQLite, gRPC) cost about 11 ms of that; this program starts in a few.
//
// The front serves a command line only when it knows it whole; anything else (help, a
// flag it does not know, a daemon that does not answer and must be started, a
// malformed line that deserves the full program's usage message) goes to the full
// program, which gives the same answer it always has.
package front

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/config/paths"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/lscmd"
	"github.com/paddockhq/paddock/internal/synccmd"
)

// Version is paddock's version, set at build time with
// -ldflags "-X github.com/paddockhq/paddock/internal/front.Version=v1.2.3".
var Version = "dev"

// FullName is the full program's file name, beside the front's own.
const FullName = "paddock-full"

// Main runs the front with the process's arguments and returns the exit code, unless it
// hands the process to the full program (then it does not return).
func Main() int {
	l, ok := parse(os.Args)
	if !ok {
		return handOver(os.Args)
	}
	if l.version {
		fmt.Fprintf(os.Stdout, "paddock version %s\n", Version)
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, remote := client(l.context)
	if c == nil {
		return handOver(os.Args)
	}
	if l.sync != nil {
		return runSync(ctx, c, remote, *l.sync)
	}
	if l.ls {
		err := lscmd.Run(ctx, c, os.Stdout, os.Stderr)
		var de *wire.DialError
		if errors.As(err, &de) {
			return handOver(os.Args) // the full program starts the daemon
		}
		if err != nil {
			Report(os.Stderr, err)
			return CodeOf(err)
		}
		return 0
	}
	code, err := RunExec(ctx, c, Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, l.exec)
	var de *wire.DialError
	if errors.As(err, &de) {
		// No daemon answered and nothing ran: the full program starts the daemon, or
		// says why it cannot be reached.
		return handOver(os.Args)
	}
	if l.exec.Shell {
		return ShellExit(os.Stderr, code, err)
	}
	return ExecExit(os.Stderr, code, err)
}

// handOver replaces this process with the full program, the command line unchanged
// (argv[0] too: git's remote helper is told apart by it).
func handOver(args []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "paddock: find this program: %v\n", err)
		return 5
	}
	full := filepath.Join(filepath.Dir(self), FullName)
	err = syscall.Exec(full, args, os.Environ())
	// Exec returns only when it failed.
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "paddock: %s is missing: paddock is two programs, %s and %s beside it\nhint: install both (`make build` puts them in bin/)\n",
			full, filepath.Base(self), FullName)
		return 5
	}
	fmt.Fprintf(os.Stderr, "paddock: run %s: %v\n", full, err)
	return 5
}

// runSync serves `paddock sync [NAME]`. A daemon that does not answer the first request
// gets the command line handed over, as exec's does.
func runSync(ctx context.Context, c *wire.Client, remote string, l syncLine) int {
	var (
		sb  synccmd.Sandbox
		err error
	)
	if l.name == "" {
		var ok bool
		if sb, ok = sandboxHere(ctx, c, remote); !ok {
			return handOver(os.Args)
		}
	} else {
		sb, err = synccmd.Get(ctx, c, l.name)
		var de *wire.DialError
		if errors.As(err, &de) {
			return handOver(os.Args)
		}
	}
	if err == nil {
		err = synccmd.Run(ctx, c, sb, remote, l.json, os.Stdout, os.Stderr)
	}
	if err != nil {
		Report(os.Stderr, err)
		return CodeOf(err)
	}
	return 0
}

// sandboxHere is the record of the one sandbox of this machine's daemon made from the
// git repository the current directory is in, found as the full program finds it (git's
// top directory, matched with each sandbox's source), without starting git and from the
// listing alone: ok is false whenever the full program could answer otherwise (several
// sandboxes or none, a daemon of another machine, git's discovery changed by the
// environment, a repository that is not the user's own, a filesystem boundary on the
// way up, a directory inside .git); it then finds the sandbox, asks which, or says why.
func sandboxHere(ctx context.Context, c *wire.Client, remote string) (synccmd.Sandbox, bool) {
	var none synccmd.Sandbox
	for _, v := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"} {
		if os.Getenv(v) != "" {
			return none, false
		}
	}
	wd, err := os.Getwd()
	if err != nil || remote != "" {
		return none, false
	}
	here, err := filepath.EvalSymlinks(wd)
	if err != nil {
		return none, false
	}
	top := here
	var st syscall.Stat_t
	if syscall.Stat(top, &st) != nil {
		return none, false
	}
	dev := st.Dev
	for {
		if _, err := os.Lstat(filepath.Join(top, ".git")); err == nil {
			if st.Uid != uint32(os.Geteuid()) {
				return none, false // git would refuse it (safe.directory)
			}
			if rel, _ := filepath.Rel(top, here); rel == ".git" || strings.HasPrefix(rel, ".git"+string(filepath.Separator)) {
				return none, false // git finds no work tree there
			}
			break
		}
		parent := filepath.Dir(top)
		if parent == top {
			return none, false
		}
		top = parent
		if syscall.Stat(top, &st) != nil || st.Dev != dev {
			return none, false
		}
	}
	var list []synccmd.Sandbox
	if err := c.Do(ctx, http.MethodGet, "/v1/sandboxes", nil, &list); err != nil {
		return none, false
	}
	found := none
	for _, sb := range list {
		if sb.SourcePath == top {
			if found.Name != "" {
				return none, false
			}
			found = sb
		}
	}
	return found, found.Name != ""
}

// client returns a client of the daemon the context names, and the context's name when
// it is not this machine's; nil when the paths or the context cannot be read: the full
// program then says what is wrong. Whether the daemon answers is learnt from the
// command's own request (a *wire.DialError), not asked first.
func client(flag string) (c *wire.Client, remote string) {
	p, err := paths.Resolve()
	if err != nil {
		return nil, ""
	}
	cf, err := LoadContexts(p)
	if err != nil {
		return nil, ""
	}
	c = wire.NewClient(p.Socket)
	if name := ContextName(flag, cf); name != LocalContext {
		rc, ok := cf.Contexts[name]
		if !ok {
			return nil, ""
		}
		if c, err = Open(rc); err != nil {
			return nil, ""
		}
		remote = name
	}
	return c, remote
}

// line is a command line the front serves.
type line struct {
	version bool
	context string
	exec    Exec
	sync    *syncLine
	ls      bool
}

// syncLine is `paddock sync [NAME] [--json]`: the plain sync, not --files, --mode or
// --history. Without a name, the sandbox is the one made from the current directory's
// repository (sandboxHere).
type syncLine struct {
	name string
	json bool
}

// parse reads a command line the front serves whole, the way the full program's flags
// read it: [GLOBAL...] --version, [GLOBAL...] exec [FLAG...] NAME [--] COMMAND [ARG...],
// [GLOBAL...] shell [GLOBAL...] NAME, [GLOBAL...] sync with NAME, --json and GLOBAL in
// any order, and [GLOBAL...] ls [GLOBAL...] (or list), where GLOBAL is --context NAME or
// --non-interactive. ok is false for every other line.
func parse(args []string) (l line, ok bool) {
	if len(args) == 0 || filepath.Base(args[0]) == gitsync.HelperName {
		return l, false
	}
	p := &lineParser{args: args[1:]}
	p.globals()
	if len(p.args) == 0 {
		return l, false
	}
	verb := p.next()
	switch verb {
	case "--version", "-v":
		return line{version: true}, len(p.args) == 0
	case "shell":
		p.globals()
		if len(p.args) != 1 || strings.HasPrefix(p.args[0], "-") {
			return l, false
		}
		return line{context: p.context, exec: Exec{Name: p.args[0], Argv: []string{"bash", "-l"}, TTY: true, Shell: true}}, true
	case "exec":
		e, ok := p.exec()
		return line{context: p.context, exec: e}, ok
	case "sync":
		s, ok := p.sync()
		return line{context: p.context, sync: &s}, ok
	case "ls", "list":
		p.globals()
		return line{context: p.context, ls: true}, len(p.args) == 0 // --json, --all-contexts, --help: the full program's
	}
	return l, false
}

// lineParser reads a command line's words in turn.
type lineParser struct {
	args    []string
	context string
}

func (p *lineParser) next() string {
	a := p.args[0]
	p.args = p.args[1:]
	return a
}

// globals reads the global flags at the front of what is left.
func (p *lineParser) globals() {
	for len(p.args) > 0 && p.global() {
	}
}

// global reads one global flag, saying whether there was one.
func (p *lineParser) global() bool {
	switch a := p.args[0]; {
	case a == "--non-interactive":
		p.next()
	case a == "--context" && len(p.args) > 1:
		p.next()
		p.context = p.next()
	case strings.HasPrefix(a, "--context="):
		p.context = strings.TrimPrefix(p.next(), "--context=")
	default:
		return false
	}
	return true
}

// value reads a flag's value: --flag=VALUE, or --flag VALUE and -f VALUE.
func (p *lineParser) value() (string, bool) {
	flag := p.next()
	if _, v, ok := strings.Cut(flag, "="); ok {
		return v, true
	}
	if len(p.args) == 0 {
		return "", false
	}
	return p.next(), true
}

// exec reads exec's flags, the sandbox's name and the command.
func (p *lineParser) exec() (e Exec, ok bool) {
	for len(p.args) > 0 && strings.HasPrefix(p.args[0], "-") {
		if p.global() {
			continue
		}
		a := p.args[0]
		switch name, _, _ := strings.Cut(a, "="); {
		case a == "-t" || a == "--tty":
			p.next()
			e.TTY = true
		case a == "-e" || name == "--env":
			v, ok := p.value()
			if !ok {
				return e, false
			}
			e.Env = append(e.Env, v)
		case a == "-w" || name == "--workdir":
			v, ok := p.value()
			if !ok {
				return e, false
			}
			e.Dir = v
		default:
			return e, false // --help, --, -te, -eK=V: what the full program reads
		}
	}
	if len(p.args) < 2 {
		return e, false
	}
	e.Name, e.Argv = p.args[0], p.args[1:]
	if e.Argv[0] == "--" {
		e.Argv = e.Argv[1:]
	}
	return e, len(e.Argv) > 0
}

// sync reads sync's words: the sandbox's name and --json, in any order, with global
// flags among them.
func (p *lineParser) sync() (s syncLine, ok bool) {
	for len(p.args) > 0 {
		switch a := p.args[0]; {
		case p.global():
		case a == "--json":
			p.next()
			s.json = true
		case strings.HasPrefix(a, "-") || s.name != "":
			return s, false // --files, --help, --, a second name: the full program's
		default:
			s.name = p.next()
		}
	}
	return s, true
}

// Streams are a command's standard streams.
type Streams struct {
	In          io.Reader
	Out, ErrOut io.Writer
}
