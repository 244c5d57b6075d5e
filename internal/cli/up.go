package cli

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/devcontainer"
	"github.com/paddockhq/paddock/internal/gitsrc"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/hostroot"
)

type upOptions struct {
	target       string
	name         string
	backend      string
	rootfs       string
	network      string
	agents       []string
	prompt       string
	image        string
	kubeContext  string
	host         string
	namespace    string
	vmm          string
	devcontainer string
	cpus         string
	memory       string
	pids         string
	disk         string
	fresh        bool
	runtime      string
	idleStop     time.Duration
}

func newCmdUp(f *Factory) *cobra.Command {
	opts := &upOptions{}
	cmd := &cobra.Command{
		Use:   "up PATH | GIT-URL | NAME",
		Short: "Create a sandbox from a git repo (or start an existing one)",
		Long: `Create a sandbox holding a clone of a git repository's committed state at /workspace.

  paddock up ~/src/myrepo        a sandbox named after the repo, on the default backend
  paddock up file:///srv/x.git   clone the URL on the host first, then as above
  paddock up myrepo              start the existing sandbox myrepo again
  paddock up myrepo --agent claude --prompt "fix the flaky test"
                                 ...and a new Claude Code session there, at work on that

Uncommitted changes in the host repo are not copied; paddock lists them.`,
		Args: exactArgs(1, "one path, git URL or sandbox name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.target = args[0]
			return runUp(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.name, "name", "", "the sandbox's name (default: the repo's directory name)")
	cmd.Flags().StringVar(&opts.backend, "backend", "", "the backend to run on, by `NAME` ('paddock doctor' lists them)")
	cmd.Flags().StringVar(&opts.rootfs, "rootfs", "", "a root filesystem directory to use instead of the host's /usr and /etc (bwrap)")
	cmd.Flags().StringVar(&opts.network, "network", "closed", "closed: loopback only, HTTP(S) through the allowlist proxy; open: the backend's normal network")
	cmd.Flags().StringVar(&opts.image, "image", "", "docker, kubernetes: the `IMAGE` to run (default paddock/sandbox:latest, which 'paddock image build' builds; on kubernetes a REGISTRY/IMAGE the nodes pull)")
	cmd.Flags().StringVar(&opts.kubeContext, "kube-context", "", "kubernetes: the kubeconfig context to run in (default: [backends.kubernetes] context, else the current one)")
	cmd.Flags().StringVar(&opts.host, "host", "", "the machine to run on, over SSH, by the `NAME` 'paddock host add' gave it; implies --backend ssh")
	cmd.Flags().StringVar(&opts.namespace, "namespace", "", "kubernetes: the namespace to run in (default: [backends.kubernetes] namespace, else paddock)")
	cmd.Flags().StringVar(&opts.vmm, "vmm", "", "microvm: the monitor, qemu or firecracker (default: [backends.microvm] vmm, else qemu)")
	cmd.Flags().BoolVar(&opts.fresh, "fresh", false, "start from nothing: remove an existing sandbox of this repo (its workspace too) and make it anew")
	cmd.Flags().StringVar(&opts.devcontainer, "devcontainer", "", "docker: a devcontainer.json to build the sandbox from (default: the project's .devcontainer, with --backend docker)")
	cmd.Flags().StringVar(&opts.cpus, "cpus", "", "CPU limit, e.g. 2 or 0.5 (default 4, at most the host's)")
	cmd.Flags().StringVar(&opts.memory, "memory", "", "memory limit, no swap beyond it, e.g. 4g or 512m (default 8g, at most the host's); /tmp gets half")
	cmd.Flags().StringVar(&opts.pids, "pids", "", "limit on processes and threads (default 4096)")
	cmd.Flags().StringVar(&opts.disk, "disk", "", "bwrap, docker: the most the workspace may take of the host's disk, e.g. 20g (default none; needs the daemon as root)")
	cmd.Flags().DurationVar(&opts.idleStop, "idle-stop", 0, "stop the sandbox after this long unused (\"30m\"), after a final snapshot (default: the config's idle_stop)")
	cmd.Flags().StringVar(&opts.runtime, "runtime", "", "docker: the engine's OCI runtime, e.g. runsc for gVisor (default: [backends.docker] runtime, else the engine's)")
	cmd.Flags().StringSliceVar(&opts.agents, "agent", nil, "the agents this sandbox is for (claude, codex, gemini...): the first gets a session (a new one in an existing sandbox), and their service hosts are allowed")
	cmd.Flags().StringVar(&opts.prompt, "prompt", "", "the first message of --agent's session: the agent starts working on it at once")
	return cmd
}

// gitURL matches what git itself takes as a remote URL.
var gitURL = gitsrc.URL

func runUp(ctx context.Context, f *Factory, opts *upOptions) error {
	limits, err := checkUpFlags(opts)
	if err != nil {
		return err
	}
	if _, statErr := os.Stat(opts.target); !gitURL.MatchString(opts.target) && statErr != nil {
		return upByName(ctx, f, opts, limits)
	}
	if gitURL.MatchString(opts.target) {
		c, err := f.Client(ctx)
		if err != nil {
			return err
		}
		if f.remote != "" {
			return upURLOnServer(ctx, f, c, opts, limits)
		}
	}
	repo, url, src, err := resolveSource(ctx, f, opts)
	if err != nil {
		return err
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	if started, err := reuseExisting(ctx, f, c, opts, repo, limits); started || err != nil {
		return err
	}
	if len(src.Dirty) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "paddock: warning: %s has uncommitted changes that will not be in the sandbox:\n", repo)
		for _, line := range src.Dirty {
			fmt.Fprintf(f.IO.ErrOut, "  %s\n", line)
		}
	}
	if err := chooseBackend(ctx, f, c, opts); err != nil {
		return err
	}
	if len(opts.agents) > 0 {
		if err := ensureKey(ctx, f, c, opts.agents[0]); err != nil {
			return err
		}
	}
	info, err := createSandbox(ctx, f, c, opts, limits, repo, url, src)
	if err != nil {
		return err
	}
	if err := firstSession(ctx, f, c, opts, info); err != nil {
		return err
	}
	fmt.Fprintln(f.IO.Out, info.Name)
	return nil
}

// upURLOnServer makes a sandbox from a git URL through a remote context: the daemon
// clones it on its host, with that host's credentials, and nothing of this machine's is
// sent. `sync` later fetches into a clone of the same repository here.
func upURLOnServer(ctx context.Context, f *Factory, c *client.Client, opts *upOptions, limits wire.Limits) error {
	url := opts.target
	if err := gitsrc.CheckRemote(url); err != nil {
		return err
	}
	if opts.name == "" {
		opts.name = wire.NameFor(url)
	}
	if started, err := reuseExisting(ctx, f, c, opts, "", limits); started || err != nil {
		return err
	}
	if len(opts.agents) > 0 {
		if err := ensureKey(ctx, f, c, opts.agents[0]); err != nil {
			return err
		}
	}
	req := wire.SandboxCreateRequest{Name: opts.name, Backend: opts.backend, Network: opts.network, Image: opts.image,
		Placement: placement(opts), CPUs: limits.CPUs, MemoryBytes: limits.MemoryBytes, PidsLimit: limits.Pids, DiskBytes: limits.DiskBytes, Runtime: opts.runtime,
		Agents: opts.agents, IdleStopSeconds: int64(opts.idleStop / time.Second), SourceURL: url, Origin: url, Clone: true}
	info, err := c.Create(ctx, req, nil, func(step string) { fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", step) })
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: sandbox %s is %s on %s (context %s), /workspace at %s\n", info.Name, info.State, info.Backend, f.remote, gitsync.Short(info.BaseCommit))
	if err := firstSession(ctx, f, c, opts, info); err != nil {
		return err
	}
	fmt.Fprintln(f.IO.Out, info.Name)
	return nil
}

// checkUpFlags refuses flags that cannot work, before anything is asked of the daemon,
// and returns the limits asked for.
func checkUpFlags(opts *upOptions) (wire.Limits, error) {
	if opts.network != "closed" && opts.network != "open" {
		return wire.Limits{}, usagef("--network is closed or open, not %q", opts.network)
	}
	if err := checkAgentFlags(opts); err != nil {
		return wire.Limits{}, err
	}
	limits, err := parseLimits(opts)
	if err != nil {
		return limits, err
	}
	if opts.idleStop < 0 || (opts.idleStop > 0 && opts.idleStop < time.Second) {
		return limits, usagef("--idle-stop is a duration of a second or more (\"30m\"), not %s", opts.idleStop)
	}
	if opts.name != "" {
		if err := wire.ValidateName(opts.name); err != nil {
			return limits, err
		}
	}
	if opts.rootfs != "" {
		abs, err := filepath.Abs(opts.rootfs)
		if err != nil {
			return limits, err
		}
		if err := hostroot.Check(abs); err != nil {
			return limits, apperr.Invalid(hostroot.Hint, "--%v", err)
		}
		opts.rootfs = abs
	}
	return limits, nil
}

// upByName starts again the sandbox a target that is no path or URL names (or, with
// --fresh, makes it again from its host repository).
func upByName(ctx context.Context, f *Factory, opts *upOptions, limits wire.Limits) error {
	notFound := apperr.NotFound("give the path of a git repository, a git URL, or the name of a sandbox (`paddock ls`)",
		"%s is neither a path nor a sandbox", opts.target)
	if wire.ValidateName(opts.target) != nil {
		return notFound
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	info, err := c.Get(ctx, opts.target)
	if err != nil {
		return notFound
	}
	if info.State == "lost" && !opts.fresh {
		if err := restoreLost(ctx, f, c, info); err != nil || len(opts.agents) == 0 {
			return err
		}
		return firstSession(ctx, f, c, opts, info)
	}
	if !opts.fresh {
		if err := sameRuntime(opts, info); err != nil {
			return err
		}
		if err := sameLimits(limits, info); err != nil {
			return err
		}
		return startExisting(ctx, f, c, opts, opts.target)
	}
	if info.SourcePath == "" {
		return usagef("sandbox %s has no host repository to start afresh from", info.Name)
	}
	opts.name, opts.target = info.Name, info.SourcePath
	return runUp(ctx, f, opts)
}

// restoreLost brings back a sandbox its backend lost from its newest snapshot: the lost
// record goes, and the snapshot comes back under the same name.
func restoreLost(ctx context.Context, f *Factory, c *client.Client, info wire.SandboxInfo) error {
	list, err := c.Snapshots(ctx, info.Name)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return apperr.NotFound("remove it with `paddock rm "+info.Name+"`, then make it again with `paddock up PATH`",
			"sandbox %s was lost by its backend, and it has no snapshot to restore", info.Name)
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: sandbox %s was lost by its backend; restoring its newest snapshot, %s\n", info.Name, list[0].ID)
	if _, err := c.Remove(ctx, info.Name, wire.RemoveRequest{Force: true, Purge: true}, nil); err != nil {
		return err
	}
	if _, err := c.RestoreSnapshot(ctx, list[0].ID, wire.RestoreRequest{Name: info.Name},
		func(step string) { fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", step) }); err != nil {
		return fmt.Errorf("%w (the snapshot is still there: `paddock restore %s`)", err, list[0].ID)
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: %s is back from %s; attach with `paddock chat %s`\n", info.Name, list[0].ID, info.Name)
	return nil
}

// resolveSource finds the host repository of the target (cloning a URL first), names the
// sandbox after it when no name was given, and describes its state.
func resolveSource(ctx context.Context, f *Factory, opts *upOptions) (repo, url string, src gitsrc.Source, err error) {
	if gitURL.MatchString(opts.target) {
		url = opts.target
		if opts.name == "" {
			opts.name = wire.NameFor(url)
		}
		var p config.Paths
		if p, err = f.Paths(); err == nil {
			repo = filepath.Join(p.Cache, "repos", opts.name)
			err = gitsrc.Clone(ctx, url, repo, gitsrc.CloneOptions{Progress: func(step string) { fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", step) }})
		}
	} else {
		repo, err = repoRoot(ctx, opts.target)
		if opts.name == "" && err == nil {
			opts.name = wire.NameFor(filepath.Base(repo))
		}
	}
	if err != nil {
		return "", "", src, err
	}
	src, err = gitsrc.Describe(ctx, repo)
	return repo, url, src, err
}

// reuseExisting deals with a sandbox of the same name: from this repository it is
// started again (or removed, with --fresh); from another, the name is taken. started
// says the sandbox is up and nothing is left to do.
func reuseExisting(ctx context.Context, f *Factory, c *client.Client, opts *upOptions, repo string, limits wire.Limits) (started bool, err error) {
	existing, err := c.Get(ctx, opts.name)
	if apperr.KindOf(err) == apperr.KindNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	switch {
	case existing.SourcePath == repo && opts.fresh:
		fmt.Fprintf(f.IO.ErrOut, "paddock: --fresh: removing sandbox %s and its workspace\n", opts.name)
		_, err := c.Remove(ctx, opts.name, wire.RemoveRequest{Force: true, Purge: true}, nil)
		return false, err
	case existing.SourcePath == repo && existing.State == "lost":
		if err := restoreLost(ctx, f, c, existing); err != nil || len(opts.agents) == 0 {
			return true, err
		}
		return true, firstSession(ctx, f, c, opts, existing)
	case existing.SourcePath == repo:
		if err := sameRuntime(opts, existing); err != nil {
			return false, err
		}
		if err := sameLimits(limits, existing); err != nil {
			return false, err
		}
		return true, startExisting(ctx, f, c, opts, opts.name)
	}
	return false, apperr.Conflict("choose another name with --name, or remove it with `paddock rm "+opts.name+"`",
		"a sandbox named %q already exists (from %s)", opts.name, existing.SourcePath)
}

// createSandbox asks the daemon for the sandbox, streaming the repository's bundle to
// it and printing its progress.
func createSandbox(ctx context.Context, f *Factory, c *client.Client, opts *upOptions, limits wire.Limits, repo, url string, src gitsrc.Source) (wire.SandboxInfo, error) {
	bundle, wait, err := gitsrc.Bundle(ctx, repo)
	if err != nil {
		return wire.SandboxInfo{}, err
	}
	dc, err := devcontainerFor(ctx, f, c, opts, repo)
	if err != nil {
		bundle.Close()
		wait()
		return wire.SandboxInfo{}, err
	}
	req := wire.SandboxCreateRequest{Name: opts.name, Backend: opts.backend, Rootfs: opts.rootfs, Network: opts.network,
		Image: opts.image, Placement: placement(opts), CPUs: limits.CPUs, MemoryBytes: limits.MemoryBytes, PidsLimit: limits.Pids, DiskBytes: limits.DiskBytes, Devcontainer: dc, Runtime: opts.runtime,
		Agents: opts.agents, SourcePath: repo, IdleStopSeconds: int64(opts.idleStop / time.Second),
		SourceURL: url, Origin: src.Origin, Branch: src.Branch, Commit: src.Commit, GitName: src.GitName, GitEmail: src.GitEmail}
	if url != "" {
		req.Origin = url
	}
	info, err := c.Create(ctx, req, bundle, func(step string) { fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", step) })
	bundle.Close()
	if werr := wait(); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return info, err
	}
	on := info.Backend
	if info.Runtime != "" {
		on += " under " + info.Runtime
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: sandbox %s is %s on %s, /workspace at %s\n", info.Name, info.State, on, gitsync.Short(src.Commit))
	return info, nil
}

// placement is where `up --host`, `--kube-context`, `--namespace` and `--vmm` put the
// sandbox; nil when nowhere.
func placement(opts *upOptions) map[string]string {
	if opts.kubeContext == "" && opts.namespace == "" && opts.host == "" && opts.vmm == "" {
		return nil
	}
	p := map[string]string{}
	if opts.host != "" {
		p[wire.PlaceHost] = opts.host
	}
	if opts.kubeContext != "" {
		p["kube-context"] = opts.kubeContext
	}
	if opts.namespace != "" {
		p["namespace"] = opts.namespace
	}
	if opts.vmm != "" {
		p["vmm"] = opts.vmm
	}
	return p
}

// devcontainerFor applies the precedence --devcontainer > --image > the project's
// .devcontainer (with a backend that builds images, as the daemon's doctor says) > the
// default image, and prints what a devcontainer.json asks that paddock does not do.
// --devcontainer with no --backend leaves the choice of a backend that builds it to the
// daemon.
func devcontainerFor(ctx context.Context, f *Factory, c *client.Client, opts *upOptions, repo string) (*wire.Devcontainer, error) {
	path := opts.devcontainer
	if path == "" {
		if opts.image != "" {
			return nil, nil
		}
		found := devcontainer.Find(repo)
		if found == "" {
			return nil, nil
		}
		doc, err := c.Doctor(ctx)
		if err != nil {
			return nil, err
		}
		var builders []string
		for _, b := range doc.Backends {
			if b.BuildsImages {
				builders = append(builders, b.Name)
			}
		}
		if !slices.Contains(builders, opts.backend) {
			fmt.Fprintf(f.IO.ErrOut, "paddock: %s is used with --backend %s\n", found, strings.Join(builders, " or --backend "))
			return nil, nil
		}
		path = found
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	dc, warnings, err := devcontainer.Load(abs)
	if err != nil {
		return nil, apperr.Invalid("", "%v", err)
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: using %s\n", abs)
	for _, w := range warnings {
		fmt.Fprintf(f.IO.ErrOut, "paddock: warning: %s\n", w)
	}
	if opts.image != "" {
		fmt.Fprintf(f.IO.ErrOut, "paddock: warning: --image %s is ignored: --devcontainer takes precedence\n", opts.image)
		opts.image = ""
	}
	return &dc, nil
}

// parseLimits reads --cpus, --memory, --pids and --disk. A value given must be a positive number
// large enough for a sandbox to run; leaving the flag out gives the default.
func parseLimits(opts *upOptions) (wire.Limits, error) {
	var l wire.Limits
	if opts.cpus != "" {
		v, err := strconv.ParseFloat(opts.cpus, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return l, usagef("--cpus takes a positive number of processors, like 2 or 0.5, not %q", opts.cpus)
		}
		l.CPUs = v
	}
	if opts.memory != "" {
		n, err := parseBytes(opts.memory)
		if err != nil {
			return l, err
		}
		l.MemoryBytes = n
	}
	if opts.pids != "" {
		n, err := strconv.ParseInt(opts.pids, 10, 64)
		if err != nil || n <= 0 {
			return l, usagef("--pids takes a positive number of processes, like 1000, not %q", opts.pids)
		}
		l.Pids = n
	}
	if opts.disk != "" {
		n, err := parseBytes(opts.disk)
		if err != nil {
			return l, usagef("--disk takes a size like 512m or 20g, not %q", opts.disk)
		}
		l.DiskBytes = n
	}
	if err := wire.CheckLimits(l.CPUs, l.MemoryBytes, l.Pids); err != nil {
		return l, usagef("%v", err)
	}
	if err := wire.CheckDisk(l.DiskBytes); err != nil {
		return l, usagef("%v", err)
	}
	return l, nil
}

// parseBytes reads a size like 512m, 4g or 1073741824.
func parseBytes(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	mult := int64(1)
	switch strings.ToLower(s[len(s)-1:]) {
	case "k":
		mult = 1 << 10
	case "m":
		mult = 1 << 20
	case "g":
		mult = 1 << 30
	}
	num := s
	if mult != 1 {
		num = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, usagef("--memory takes a size like 512m or 4g, not %q", s)
	}
	return n * mult, nil
}

// sameRuntime refuses --runtime on an existing sandbox made under another: the runtime
// is chosen when a sandbox is made.
func sameRuntime(opts *upOptions, info wire.SandboxInfo) error {
	if opts.runtime == "" || opts.runtime == info.Runtime {
		return nil
	}
	was := info.Runtime
	if was == "" {
		was = "its backend's default runtime"
	}
	return usagef("sandbox %s runs under %s: to make it anew under %s, add --fresh", info.Name, was, opts.runtime)
}

// sameLimits refuses --cpus, --memory, --pids and --disk on an existing sandbox: its limits are
// chosen when it is made.
func sameLimits(l wire.Limits, info wire.SandboxInfo) error {
	if l == (wire.Limits{}) {
		return nil
	}
	return usagef("sandbox %s exists, and its limits were set when it was made: to make it anew with these, add --fresh", info.Name)
}

// git runs a host git command on the user's own repository.
// git runs git in dir (gitsrc.Git).
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitsrc.Git(ctx, dir, args...)
}

func repoRoot(ctx context.Context, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", apperr.Invalid("give the directory of a git repository", "%s is not a directory", path)
	}
	top, err := git(ctx, abs, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", apperr.Invalid("run `git init` there and commit, or give another path", "%s is not a git repository", path)
	}
	return top, nil
}
