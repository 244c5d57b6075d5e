package servecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/conform"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/daemon"
	"github.com/paddockhq/paddock/internal/hostgit"
	"github.com/paddockhq/paddock/internal/sandbox"
)

type verifyOptions struct {
	backends []string
	json     bool
}

func newCmdVerify(f *cli.Factory) *cobra.Command {
	opts := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Run the security checks against fresh sandboxes of each backend here, and report",
		Long: `Creates sandboxes of each backend that works on this machine (or of those --backend names),
acts inside them as a hostile agent would (reading the host's secrets, escaping by symlinks,
reaching the host's network, its kernel, its sockets, the agent's own process), and prints
each check: PASS, FAIL, or NOT APPLICABLE with why; the backend's isolation tier and the
versions of what isolates it; a backend with a stronger runtime registered here (docker's
runsc) is checked under it too; the backends are checked at the same time. It then
removes every sandbox it made and checks nothing was left on the host. It also checks, with no sandbox, that paddock's own host git (sync,
diff, merge) runs no program planted in a sandbox's repository. It needs no daemon: for
what only a daemon's sandbox shows (the API key the daemon holds is nowhere inside, its
egress proxy refuses and records what no allowlist names, nothing goes around it, and
with the daemon stopped its sandbox's requests fail; escape sequences the sandbox writes
show escaped in paddock's listings), it
starts a private one in its own directory, with a made-up key, on the first local backend
it checks, and removes it; the user's daemon and its state are never touched.
docs/security.md says what each check proves.

Exit status: 0 when every check that applies holds, 6 when one fails (or something was
left behind), 5 when a backend named with --backend cannot run here.`,
		Args: cli.ExactArgs(0, "no arguments (name backends with --backend)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.backends, "backend", nil, "check only this `BACKEND` (repeatable; default: every backend that works here)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the report as JSON")
	return cmd
}

// verifyReport is what verify found, on every backend it ran on.
type verifyReport struct {
	Backends []backendVerify `json:"backends"`
	// Skipped are the backends that cannot run here, each with why.
	Skipped []skippedBackend `json:"skipped"`
	// HostGit are the checks of paddock's own host-side git paths (no sandbox needed).
	HostGit []conform.Result `json:"host_git"`
	// Daemon are the checks made through a private daemon's sandbox, on one local backend.
	Daemon *daemonVerify `json:"daemon,omitempty"`
}

// backendVerify is one backend's checks, under one of its runtimes.
type backendVerify struct {
	// Name is the backend's, with "+RUNTIME" for a runtime other than its default.
	Name    string `json:"name"`
	Backend string `json:"backend"`
	// Runtime is the runtime its sandboxes ran under; empty for the backend's default.
	Runtime   string            `json:"runtime,omitempty"`
	Isolation backend.Isolation `json:"isolation"`
	Versions  map[string]string `json:"versions"`
	Checks    []conform.Result  `json:"checks"`
	// LeftBehind is what the sandboxes verify made left on the host once destroyed.
	LeftBehind []string `json:"left_behind"`
	Passed     int      `json:"passed"`
	Failed     int      `json:"failed"`
	NotApplied int      `json:"not_applicable"`
	Seconds    float64  `json:"seconds"`
}

// skippedBackend is a backend verify did not run on, and why.
type skippedBackend struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
	Fix    string `json:"fix,omitempty"`
}

func runVerify(ctx context.Context, f *cli.Factory, opts *verifyOptions) error {
	known := backend.Names()
	for _, name := range opts.backends {
		if !slices.Contains(known, name) {
			return apperr.Invalid("run `paddock verify` with no --backend to check every backend that works here",
				"unknown backend %q (known: %s)", name, strings.Join(known, ", "))
		}
	}
	p, err := f.Paths()
	if err != nil {
		return err
	}
	cfg, err := config.Load(p.Config)
	if err != nil {
		return err
	}
	// Everything verify makes lives in a directory of its own beside the daemon's
	// backends' (whose paths are known to be short enough for the sandboxes' unix
	// sockets), removed at the end: none of it is the daemon's, nor shows in its listings.
	if err := p.MkdirAll(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(p.Sandboxes, "v")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o711); err != nil {
		return err
	}
	guest, err := verifyGuest(cfg, filepath.Join(tmp, "guest"))
	if err != nil {
		return err
	}
	names := opts.backends
	if len(names) == 0 {
		names = known
	}
	report := verifyReport{Backends: []backendVerify{}, Skipped: []skippedBackend{}}
	var unavailable []string
	// The backends are checked at once, each its runtimes in turn: most of a check's
	// time is a sandbox starting, or a VM booting, which others' checks can use. The
	// report keeps the order of the names.
	runs := make([]verifyRun, len(names))
	errOut := &lineWriter{w: f.IO.ErrOut}
	var wg sync.WaitGroup
	local := "" // the first backend checked whose sandboxes are on this machine
	for i, name := range names {
		b, err := backend.New(name, backend.Env{Dir: filepath.Join(tmp, name), Shared: filepath.Join(p.Sandboxes, name),
			Options: cfg.Backends[name], ConfigDir: filepath.Dir(p.Config), Hide: []string{filepath.Dir(p.Config), config.SystemConfigDir}})
		if err == nil {
			err = b.Available(ctx)
		}
		d, _ := backend.Registered(name)
		if err == nil && len(opts.backends) == 0 && d.Elsewhere != "" && cfg.Backends[name] == nil {
			err = &backend.UnavailableError{Backend: name, Reason: "not checked unless named: " + d.Elsewhere,
				Fix: "paddock verify --backend " + name}
		}
		if err != nil {
			s := skippedBackend{Name: name, Reason: err.Error()}
			var ue *backend.UnavailableError
			if errors.As(err, &ue) {
				s.Reason, s.Fix = ue.Reason, ue.Fix
			}
			report.Skipped = append(report.Skipped, s)
			fmt.Fprintf(errOut, "%s: skipped: %s\n", name, s.Reason)
			if len(opts.backends) > 0 {
				unavailable = append(unavailable, name)
			}
			closeBackend(b)
			continue
		}
		if local == "" && d.Elsewhere == "" && d.Isolation != backend.IsolationUnranked {
			local = name
		}
		wg.Add(1)
		go func(run *verifyRun) {
			defer wg.Done()
			defer closeBackend(b)
			for _, rt := range verifyRuntimes(ctx, b) {
				bv, err := verifyBackend(ctx, errOut, b, rt, guest, p)
				if bv != nil {
					run.results = append(run.results, *bv)
				}
				if err != nil {
					run.err = err
					return
				}
			}
		}(&runs[i])
	}
	wg.Wait()
	for _, run := range runs {
		report.Backends = append(report.Backends, run.results...)
	}
	for _, run := range runs {
		if run.err != nil {
			return run.err
		}
	}
	// paddock's own host-side git paths, which need no sandbox.
	fmt.Fprintln(errOut, "host git: checking")
	report.HostGit, err = conform.RunFunc(ctx, hostgit.Suite, func(r conform.Result) { progressLine(errOut, "host git", r) })
	if err != nil {
		return err
	}
	// What only a daemon's sandbox shows, through a private daemon on a local backend.
	if local != "" {
		fmt.Fprintf(errOut, "daemon: checking (a private daemon, on %s)\n", local)
		start := time.Now()
		checks, err := daemonChecks(ctx, tmp, local, func(r conform.Result) { progressLine(errOut, "daemon", r) })
		if err != nil {
			return err
		}
		report.Daemon = &daemonVerify{Backend: local, Checks: checks, Seconds: time.Since(start).Seconds()}
		fmt.Fprintf(errOut, "daemon: done in %.0fs\n", report.Daemon.Seconds)
	}
	if opts.json {
		if err := f.WriteJSON(report); err != nil {
			return err
		}
	} else {
		writeVerify(f.IO.Out, report)
	}
	return verifyOutcome(report, unavailable)
}

// verifyRun is what verify found on one backend: each runtime's checks, and the error
// that stopped it, if one did.
type verifyRun struct {
	results []backendVerify
	err     error
}

// verifyOutcome is the error verify exits with: the failed checks, else the backends
// named that cannot run here.
func verifyOutcome(report verifyReport, unavailable []string) error {
	var failed []string
	failedIn := func(group string, checks []conform.Result) {
		for _, c := range checks {
			if c.Status == conform.Fail {
				failed = append(failed, group+": "+c.Name)
			}
		}
	}
	failedIn("host git", report.HostGit)
	if report.Daemon != nil {
		failedIn("daemon", report.Daemon.Checks)
	}
	for _, bv := range report.Backends {
		failedIn(bv.Name, bv.Checks)
		if len(bv.LeftBehind) > 0 {
			failed = append(failed, bv.Name+": left behind")
		}
	}
	if len(failed) > 0 {
		return apperr.CheckFailed("the report above says what each check found; docs/security.md says what it proves",
			"%d security check(s) failed: %s", len(failed), strings.Join(failed, ", "))
	}
	if len(unavailable) > 0 {
		return apperr.Unavailable("run `paddock doctor` for what each backend needs",
			"cannot run here: %s", strings.Join(unavailable, ", "))
	}
	if len(report.Backends) == 0 {
		return apperr.Unavailable("run `paddock doctor` for what each backend needs", "no backend works here: nothing was checked")
	}
	return nil
}

// verifyGuest installs the guest the daemon would inject (the config's, else the small
// guest beside this binary, else this binary) in dir.
func verifyGuest(cfg config.Config, dir string) (sandbox.GuestBinary, error) {
	src, err := daemon.GuestSource(cfg)
	if err != nil {
		return sandbox.GuestBinary{}, err
	}
	return sandbox.InstallGuest(src, dir)
}

func closeBackend(b backend.Backend) {
	if c, ok := b.(backend.Closer); ok {
		c.Close()
	}
}

// leftoverer is a backend that lists what a destroyed sandbox left on the host.
type leftoverer interface {
	Leftovers(id backend.ID) []string
}

// verifyRuntime is a runtime of a backend verify checks: the default (Name empty) and
// each stronger one the backend can use here (docker's runsc), with its tier.
type verifyRuntime struct {
	Name      string
	Isolation backend.Isolation
}

// verifyRuntimes are b's default runtime and the others it reports available here.
func verifyRuntimes(ctx context.Context, b backend.Backend) []verifyRuntime {
	rts := []verifyRuntime{{Isolation: b.Describe().Isolation}}
	rs, ok := b.(backend.RuntimeSelector)
	if !ok || !b.Describe().Runtimes {
		return rts
	}
	for _, r := range rs.Runtimes(ctx) {
		if r.Available && r.Name != rs.DefaultRuntime() && rs.CheckRuntime(ctx, r.Name, false) == nil {
			rts = append(rts, verifyRuntime{Name: r.Name, Isolation: r.Isolation})
		}
	}
	return rts
}

// verifyBackend runs the checks on b's sandboxes under rt, destroying every sandbox it
// made however the run ends (Ctrl-C too), then looks for what they left.
func verifyBackend(ctx context.Context, errOut io.Writer, b backend.Backend, rt verifyRuntime, guest sandbox.GuestBinary, p config.Paths) (*backendVerify, error) {
	name := b.Name()
	if rt.Name != "" {
		name += "+" + rt.Name
	}
	bv := &backendVerify{Name: name, Backend: b.Name(), Runtime: rt.Name, Isolation: rt.Isolation,
		Versions: verifyVersions(ctx, b, rt.Name), LeftBehind: []string{}}
	expect := backend.ExpectOf(ctx, b, rt.Name)
	var mu sync.Mutex
	var ids []backend.ID
	h := conform.Harness{
		Backend: b,
		Spec: func(id backend.ID) backend.Spec {
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
			return backend.Spec{ID: id, Name: "verify-" + string(id), GuestBinary: guest.Path, GuestSHA256: guest.SHA256, Runtime: rt.Name}
		},
		// Where the daemon keeps its config and state: secrets planted there must stay out.
		HostSecrets:      existingDirs(filepath.Join(filepath.Dir(p.Config), "verify-secret"), filepath.Join(p.State, "verify-secret")),
		LimitsEndSandbox: expect.LimitsEndSandbox,
		Allows:           expect.Allows,
		PidsLimit:        expect.PidsLimit,
		Machine:          expect.Machine,
	}
	lo, _ := b.(leftoverer)
	if lo != nil {
		h.Leftovers = lo.Leftovers
	}
	fmt.Fprintf(errOut, "%s: checking (isolation: %s)\n", name, tierLabel(rt.Isolation))
	start := time.Now()
	results, runErr := conform.Run(ctx, h, func(r conform.Result) { progressLine(errOut, name, r) })
	// Whatever happened, no sandbox of verify's outlives it.
	mu.Lock()
	made := append([]backend.ID(nil), ids...)
	mu.Unlock()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	for _, id := range made {
		if err := b.Destroy(dctx, id); err != nil {
			bv.LeftBehind = append(bv.LeftBehind, fmt.Sprintf("sandbox %s: destroy: %v", id, err))
		}
		if lo != nil {
			bv.LeftBehind = append(bv.LeftBehind, lo.Leftovers(id)...)
		}
	}
	bv.Checks, bv.Seconds = results, time.Since(start).Seconds()
	bv.Passed, bv.Failed, bv.NotApplied = tally(results)
	if runErr != nil {
		return bv, fmt.Errorf("verify of %s stopped (%w); its sandboxes were destroyed", name, runErr)
	}
	return bv, nil
}

// tierLabel names a tier in verify's words: an unranked backend's sandboxes are what the
// machine it reaches makes them (a host's own backend, over SSH).
func tierLabel(i backend.Isolation) string {
	if i == backend.IsolationUnranked {
		return "unranked: that of the host's backend"
	}
	return i.String()
}

// progressLine tells of a check as it ends, on stderr.
func progressLine(errOut io.Writer, section string, r conform.Result) {
	line := fmt.Sprintf("%s: %-14s %s (%.1fs)", section, r.Status, r.Name, r.Seconds)
	if r.Status != conform.Pass {
		line += ": " + firstLine(r.Why)
	}
	fmt.Fprintln(errOut, line)
}

// lineWriter is stderr shared by the backends verify checks at once: each write (a
// line) goes whole.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// existingDirs keeps the paths whose directories exist.
func existingDirs(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if fi, err := os.Stat(filepath.Dir(p)); err == nil && fi.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// verifyVersions are the versions of what isolates b's sandboxes under runtime (empty:
// its default): always the kernel, and the tools its description names.
func verifyVersions(ctx context.Context, b backend.Backend, runtime string) map[string]string {
	v := map[string]string{}
	if release, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		v["kernel"] = strings.TrimSpace(string(release))
	}
	tool := func(key string, argv ...string) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output(); err == nil {
			v[key] = versionOf(string(out))
		}
	}
	if rs, ok := b.(backend.RuntimeSelector); ok && runtime == "" {
		runtime = rs.DefaultRuntime()
	}
	for _, t := range b.Describe().Tools {
		if t.Runtime == "" || t.Runtime == runtime {
			tool(t.Name, t.Argv...)
		}
	}
	return v
}

// versionOf is the version in a tool's answer to --version: the first word of its first
// line that has a digit ("bubblewrap 0.8.0" is 0.8.0), else the whole line.
func versionOf(out string) string {
	line := firstLine(strings.TrimSpace(out))
	for _, w := range strings.Fields(line) {
		if strings.ContainsAny(w, "0123456789") {
			return w
		}
	}
	return line
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
