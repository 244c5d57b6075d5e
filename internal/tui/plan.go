package tui

// What the new-session dialog will make: its checks, its choices and the creation.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/gitsrc"
	"github.com/paddockhq/paddock/internal/termtext"
)

// plan is what Create will make.
type plan struct {
	project, sandbox, name, agent, backend, runtime, network string
	isNew, worktree, justDoIt                                bool
	// disposable: the agent is told its sandbox is disposable (it reads a memory file).
	disposable bool
	why        string // the backend choice, for "Just do it"
	prompt     string // the agent's first message, "" for none
	// warn says, for "Just do it", that a stronger tier is here but emulated (slow).
	warn string
}

// projectPath is the project field as an absolute path.
func (d *dialog) projectPath() string {
	p := strings.TrimSpace(d.project.Value())
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[2:])
		}
	}
	if p != "" && !filepath.IsAbs(p) {
		p = filepath.Join(d.m.opts.Cwd, p)
	}
	return filepath.Clean(p)
}

// projectChanged offers directory completions and the project's sandboxes.
func (d *dialog) projectChanged() {
	d.project.SetSuggestions(dirCompletions(d.project.Value()))
	p := d.projectPath()
	d.sandboxes = []string{newSandbox}
	for name, sb := range d.m.sandboxes {
		if sb.SourcePath == p {
			d.sandboxes = append(d.sandboxes, name)
		}
	}
	sort.Strings(d.sandboxes[1:])
	if d.sandboxI >= len(d.sandboxes) {
		d.sandboxI = 0
	}
	d.suggestName()
	d.validate()
}

// completeProject completes the project field to the longest common prefix of the
// directories it could name; it says whether it changed anything.
func (d *dialog) completeProject() bool {
	opts := dirCompletions(d.project.Value())
	if len(opts) == 0 {
		return false
	}
	prefix := opts[0]
	for _, o := range opts[1:] {
		for !strings.HasPrefix(o, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	if len(opts) == 1 {
		prefix += "/"
	}
	if prefix == d.project.Value() || len(prefix) < len(d.project.Value()) {
		return false
	}
	d.project.SetValue(prefix)
	d.project.CursorEnd()
	d.projectChanged()
	return true
}

// dirCompletions lists the directories whose path starts with what was typed.
func dirCompletions(typed string) []string {
	if typed == "" {
		return nil
	}
	dir, base := filepath.Split(typed)
	lookIn := dir
	if lookIn == "" {
		lookIn = "."
	}
	if strings.HasPrefix(lookIn, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			lookIn = filepath.Join(home, lookIn[2:])
		}
	}
	entries, err := os.ReadDir(lookIn)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), base) || (strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		out = append(out, dir+e.Name())
		if len(out) == 50 {
			break
		}
	}
	return out
}

// suggestName proposes a session name from the project's current branch, until the user
// types one.
func (d *dialog) suggestName() {
	if d.nameEdited {
		return
	}
	base := "main"
	if branch, err := gitsrc.Git(context.Background(), d.projectPath(), "symbolic-ref", "--short", "-q", "HEAD"); err == nil {
		base = branch
	}
	base = wire.NameFor(strings.ReplaceAll(base, "/", "-"))
	if base == "" {
		base = "session"
	}
	taken := map[string]bool{}
	if !d.isNew() {
		for _, s := range d.m.sessions[d.sandboxes[d.sandboxI]] {
			taken[s.Name] = true
		}
	}
	name := base
	for i := 2; taken[name]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	d.name.SetValue(name)
	d.name.CursorEnd()
}

// chooseJustDoIt picks the strongest isolation this daemon has for unattended work,
// from the backends' descriptions (their tier of isolation, and their runtimes'), never
// one emulated here: why says what it picked and why; warn, when a stronger tier is
// here but emulated, what that costs and how to choose it anyway.
func chooseJustDoIt(backends []wire.BackendReport) (name, runtime, why, warn string) {
	type option struct {
		backend, runtime string
		tier             wire.Isolation
		pref             int
		emulated         bool
		slow             string
	}
	var opts []option
	for _, b := range backends {
		if !b.Available || b.Isolation == wire.IsolationUnranked {
			continue
		}
		opts = append(opts, option{b.Name, "", b.Isolation, b.Preference, b.Emulated, b.Slow})
		for _, r := range b.Runtimes {
			if r.Available && r.Isolation > b.Isolation {
				opts = append(opts, option{b.Name, r.Name, r.Isolation, b.Preference, b.Emulated, b.Slow})
			}
		}
	}
	// Strongest first; within a tier, the daemon's own order of defaults (a backend
	// with none, such as a cluster, after), then the name.
	rank := func(p int) int {
		if p == 0 {
			return 1 << 30
		}
		return p
	}
	sort.SliceStable(opts, func(i, j int) bool {
		a, b := opts[i], opts[j]
		if a.tier != b.tier {
			return a.tier > b.tier
		}
		if rank(a.pref) != rank(b.pref) {
			return rank(a.pref) < rank(b.pref)
		}
		return a.backend < b.backend
	})
	var slow *option
	for i := range opts {
		o := &opts[i]
		if o.emulated {
			if slow == nil {
				slow = o
			}
			continue
		}
		why = "picked " + backendText(o.backend, o.runtime) + " (" + o.tier.String() + "): the strongest isolation here that is not emulated"
		if slow != nil && slow.tier > o.tier {
			warn = slow.backend + " (" + slow.tier.String() + ") is here but emulated: " + slow.slow +
				"; to use it anyway, untick Just do it and choose it as the backend"
		}
		return o.backend, o.runtime, why, warn
	}
	if slow != nil {
		return "", "", "", "only emulated backends are here (" + slow.backend + ": " + slow.slow +
			"): untick Just do it and choose one as the backend, or see `paddock doctor`"
	}
	return "", "", "", ""
}

// validate works out the plan, or why it cannot work, before anything is made.
func (d *dialog) validate() (plan, bool) {
	p := plan{project: d.projectPath(), name: strings.TrimSpace(d.name.Value()), isNew: d.isNew(),
		worktree: d.worktree, justDoIt: d.justDoIt, network: "closed"}
	if d.open {
		p.network = "open"
	}
	fail := func(format string, args ...any) (plan, bool) {
		d.problem = fmt.Sprintf(format, args...)
		return p, false
	}
	if d.doctor == nil {
		if d.doctorErr != "" {
			return fail("%s", d.doctorErr)
		}
		return fail("checking backends and agents…")
	}
	if p.isNew {
		if strings.TrimSpace(d.project.Value()) == "" {
			return fail("give the project: the path of a git repository")
		}
		if st, err := os.Stat(p.project); err != nil || !st.IsDir() {
			return fail("%s is not a directory", p.project)
		}
		if _, err := os.Stat(filepath.Join(p.project, ".git")); err != nil {
			return fail("%s is not a git repository (run `git init` there first)", p.project)
		}
		p.sandbox = d.newSandboxName(p.project)
	} else {
		p.sandbox = d.sandboxes[d.sandboxI]
	}
	if p.isNew {
		if d.justDoIt {
			p.backend, p.runtime, p.why, p.warn = chooseJustDoIt(d.backends)
			if p.backend == "" && p.warn != "" {
				return fail("%s", p.warn)
			}
			if p.backend == "" {
				return fail("no backend is available here: run `paddock doctor`")
			}
		} else {
			if len(d.backends) == 0 {
				return fail("the daemon has no backends: run `paddock doctor`")
			}
			b := d.backends[d.backendI]
			if !b.Available {
				return fail("backend %s is not available: %s", b.Name, strings.TrimSpace(b.Reason+" "+b.Fix))
			}
			p.backend = b.Name
		}
	} else {
		sb := d.m.sandboxes[p.sandbox]
		p.backend, p.runtime = sb.Backend, sb.Runtime
		if d.justDoIt {
			p.why = "an existing sandbox keeps its backend (" + backendText(p.backend, p.runtime) + "): choose a new sandbox for the strongest here"
		}
	}
	if len(d.agents) == 0 {
		return fail("the daemon knows no agents")
	}
	a := d.agents[d.agentI]
	p.agent = a.Name
	if p.prompt = strings.TrimSpace(d.prompt.Value()); p.prompt != "" && a.Name == "shell" {
		return fail("the shell takes no first prompt: choose an agent, or clear the first prompt")
	}
	p.disposable = p.justDoIt && a.Disposable
	if !a.Available && p.isNew && d.runsHostSystem(p.backend) {
		hint := a.Install
		if hint == "" {
			hint = "install it on the host"
		}
		return fail("agent %s is not installed (a %s sandbox runs the host's /usr): %s", a.Name, p.backend, hint)
	}
	if err := wire.ValidateName(p.name); err != nil {
		return fail("session name: choose letters, digits, '.', '_' and '-' (at most 63)")
	}
	if !p.isNew {
		if _, ok := d.m.sessionInfo(p.sandbox, p.name); ok {
			return fail("%s already has a session named %s", p.sandbox, p.name)
		}
		if st := d.m.sandboxes[p.sandbox].State; st != "running" {
			return fail("%s is %s: start it first (R on its line)", p.sandbox, st)
		}
		reason, known := d.inside[p.sandbox+"/"+p.agent]
		if !known {
			return fail("checking that %s is installed in %s…", p.agent, p.sandbox)
		}
		if reason != "" {
			return fail("%s", reason)
		}
	}
	d.problem = ""
	return p, true
}

// newSandboxName is the project directory's name, made unique.
func (d *dialog) newSandboxName(project string) string {
	base := wire.NameFor(project)
	name := base
	for i := 2; ; i++ {
		if _, taken := d.m.sandboxes[name]; !taken {
			return name
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
}

// submit creates what the plan says, off the UI goroutine: the sandbox (paddock up, which
// bundles the host repo), the worktree, then the session.
func (d *dialog) submit() tea.Cmd {
	p, ok := d.validate()
	if !ok {
		return nil
	}
	m := d.m
	m.mode = modeList
	m.dialog = nil
	command, daemon := m.opts.Command, m.d
	m.nextCall++
	id := m.nextCall
	m.busy[id] = fmt.Sprintf("creating %s/%s", p.sandbox, p.name)
	m.errLine = ""
	ctx := m.ctx
	return tea.Batch(m.spinCmd(), func() tea.Msg {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		res := dialogResultMsg{id: id, sandbox: p.sandbox, name: p.name}
		run := func(args ...string) error {
			cmd := command(cctx, args...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("paddock %s: %s", args[0], firstLine(termtext.Escape(out.String()), err))
			}
			return nil
		}
		if p.isNew {
			args := []string{"up", p.project, "--name", p.sandbox, "--backend", p.backend, "--network", p.network}
			if p.runtime != "" {
				args = append(args, "--runtime", p.runtime)
			}
			if res.err = run(args...); res.err != nil {
				return res
			}
		}
		req := wire.SessionCreateRequest{Name: p.name, Agent: p.agent, Disposable: p.disposable, Prompt: p.prompt}
		if p.worktree {
			if res.err = run("worktree", "add", p.sandbox, p.name); res.err != nil {
				return res
			}
			req.Worktree = p.name
		}
		if _, err := daemon.CreateSession(cctx, p.sandbox, req, 60*time.Second); err != nil {
			res.err = fmt.Errorf("start %s/%s: %w", p.sandbox, p.name, err)
		}
		return res
	})
}

func backendText(name, runtime string) string {
	if runtime != "" {
		return name + " under " + runtime
	}
	return name
}

// runsHostSystem says the daemon describes the backend name as running the host's own
// programs in its sandboxes, so that an agent the host lacks is not in them either.
func (d *dialog) runsHostSystem(name string) bool {
	for _, b := range d.backends {
		if b.Name == name {
			return b.HostSystem
		}
	}
	return false
}
