package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/gitsrc"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/hostroot"
	"github.com/paddockhq/paddock/internal/mcp"
	"github.com/paddockhq/paddock/internal/store"
)

// CreateRequest describes a new sandbox and the repository state to seed it with: what
// a client sends (wire.SandboxCreateRequest), and what the daemon does once it is seeded.
type CreateRequest struct {
	wire.SandboxCreateRequest
	// Seeded, when set, runs once the workspace is seeded and before the sandbox counts
	// as made: what it does is part of the making (a restore fills the sandbox here), so
	// a failure, or a daemon that dies meanwhile, leaves no sandbox behind.
	Seeded func(ctx context.Context, sb store.Sandbox, c *guestclient.Client, progress Progress) error `json:"-"`
}

// checkPlacement refuses a placement the backend does not take.
func checkPlacement(b backend.Backend, placement map[string]string) error {
	keys := b.Describe().Placement
	for k, v := range placement {
		if v != "" && !slices.Contains(keys, k) {
			return apperr.Invalid(placementHint(k), "--%s is not for the %s backend", k, b.Name())
		}
	}
	return nil
}

// runsImages and buildsImages ask of a backend's description whether it runs sandboxes
// from images (`up --image`), and whether it builds them (a devcontainer).
func runsImages(d backend.Description) bool   { return d.Images.Runs() }
func buildsImages(d backend.Description) bool { return d.Images.Build }

// impliedBackend names the backend a request that names none implies: the one that
// takes a host (`up --host`), or the one that builds a devcontainer (`up --devcontainer`).
// A host given with another backend is refused.
func impliedBackend(req *CreateRequest) error {
	if req.Placement[wire.PlaceHost] != "" {
		name := backend.Which(func(d backend.Description) bool { return slices.Contains(d.Placement, wire.PlaceHost) })
		if req.Backend != "" && req.Backend != name {
			return apperr.Invalid("", "--host runs the sandbox on another machine over SSH: it is for --backend %s, not %s", name, req.Backend)
		}
		req.Backend = name
	}
	if builders := backend.NamesWhere(buildsImages); req.Backend == "" && req.Devcontainer != nil && len(builders) > 0 {
		req.Backend = builders[0]
	}
	return nil
}

// placementHint says which backend takes a placement flag.
func placementHint(key string) string {
	return "use --backend " + backend.Which(func(d backend.Description) bool { return slices.Contains(d.Placement, key) }) + ", or leave it out"
}

// Progress receives human-readable steps of a long operation.
type Progress func(step string)

// Create makes, starts and seeds a new sandbox from a git bundle of the host repo. On
// any failure it removes what it made: the sandbox either exists whole or not at all.
// A nil bundle leaves /workspace empty for req.Seeded to fill (a fork copies another
// sandbox's workspace in).
func (s *Service) Create(ctx context.Context, req CreateRequest, bundle io.Reader, progress Progress) (Info, error) {
	if progress == nil {
		progress = func(string) {}
	}
	if bundle == nil && req.Seeded == nil {
		return Info{}, apperr.Invalid("", "no repository to seed the workspace with")
	}
	if err := ValidateName(req.Name); err != nil {
		return Info{}, err
	}
	if req.Rootfs != "" {
		if err := hostroot.Check(req.Rootfs); err != nil {
			return Info{}, apperr.Invalid(hostroot.Hint, "%v", err)
		}
	}
	if req.Commit == "" {
		return Info{}, apperr.Invalid("", "no commit to seed the workspace with")
	}
	if req.Network != "" && req.Network != "closed" && req.Network != "open" {
		return Info{}, apperr.Invalid("use --network closed (the default) or --network open", "unknown network mode %q", req.Network)
	}
	if existing, err := s.opts.Store.GetSandbox(ctx, req.Name); err == nil && !Sees(ctx, existing) {
		// Names are one namespace for the whole daemon; another user's sandbox shows
		// nothing of itself but that the name is taken.
		return Info{}, apperr.Conflict("choose another name with --name", "the name %q is taken", req.Name)
	} else if err == nil {
		return Info{}, apperr.Conflict("choose another name with --name, or remove it with `paddock rm "+req.Name+"`",
			"a sandbox named %q already exists (from %s)", req.Name, orNone(existing.SourcePath))
	}
	if err := impliedBackend(&req); err != nil {
		return Info{}, err
	}
	if err := wire.CheckLimits(req.CPUs, req.MemoryBytes, req.PidsLimit); err != nil {
		return Info{}, apperr.Invalid("", "%v", err)
	}
	if err := wire.CheckDisk(req.DiskBytes); err != nil {
		return Info{}, apperr.Invalid("", "%v", err)
	}
	b, err := s.PickBackend(ctx, req.Backend)
	if err != nil {
		return Info{}, err
	}
	if err := canLimitDisk(ctx, b, req.DiskBytes); err != nil {
		return Info{}, err
	}
	if images := b.Describe().Images; !images.Runs() && req.Image != "" {
		return Info{}, apperr.Invalid("use --backend "+backend.Which(runsImages)+", or leave it out", "--image is for backends that run images, not %s", b.Name())
	} else if !images.Build && req.Devcontainer != nil {
		builder := backend.Which(buildsImages)
		return Info{}, apperr.Invalid("use --backend "+builder+", or leave it out", "--devcontainer is for the %s backend, not %s", builder, b.Name())
	}
	if err := checkPlacement(b, req.Placement); err != nil {
		return Info{}, err
	}
	runtime, err := checkRuntime(ctx, b, req.Runtime, req.Network == "open")
	if err != nil {
		return Info{}, err
	}
	sb := store.Sandbox{ID: newID(), Name: req.Name, Backend: b.Name(), State: "creating", Runtime: runtime,
		SourcePath: req.SourcePath, SourceURL: req.SourceURL, BaseCommit: req.Commit, Rootfs: req.Rootfs,
		Agents: strings.Join(req.Agents, ","), IdleStop: time.Duration(req.IdleStopSeconds) * time.Second, OwnerID: ownerID(ctx)}
	if err := assignNetwork(&sb, req.Network == "open"); err != nil {
		return Info{}, err
	}
	if err := s.opts.Store.CreateSandbox(ctx, sb); err != nil {
		if errors.Is(err, store.ErrNameTaken) {
			return Info{}, apperr.Conflict("choose another name with --name", "a sandbox named %q already exists", req.Name)
		}
		return Info{}, err
	}
	defer s.lock(sb.ID)()

	info, err := s.create(ctx, b, sb, req, bundle, progress)
	if err != nil {
		cleanup := context.WithoutCancel(ctx)
		s.dropClient(sb.ID)
		if derr := b.Destroy(cleanup, backend.ID(sb.ID)); derr != nil {
			s.log.Error("remove a sandbox whose creation failed", "sandbox", sb.Name, "err", derr)
		}
		s.opts.Store.DeleteSandbox(cleanup, sb.ID)
		return Info{}, err
	}
	return info, nil
}

func (s *Service) create(ctx context.Context, b backend.Backend, sb store.Sandbox, req CreateRequest, bundle io.Reader, progress Progress) (Info, error) {
	id := backend.ID(sb.ID)
	progress(fmt.Sprintf("creating sandbox %s on %s", sb.Name, b.Name()))
	spec := backend.Spec{ID: id, Name: sb.Name, GuestBinary: s.opts.Guest.Path, GuestSHA256: s.opts.Guest.SHA256,
		Rootfs: req.Rootfs, Env: s.sandboxEnv(sb), OpenNetwork: sb.Network == "open",
		Image: req.Image, CPUs: req.CPUs, MemoryBytes: req.MemoryBytes, PidsLimit: req.PidsLimit, DiskBytes: req.DiskBytes, Runtime: sb.Runtime,
		Source: req.SourcePath, NPM: s.npmPackages(req.Agents), Placement: req.Placement}
	if dc := req.Devcontainer; dc != nil {
		spec.Env = append(spec.Env, dc.Env...)
		if dc.Image != "" && req.Image == "" {
			spec.Image = dc.Image
		}
		if dc.Dockerfile != "" && req.Image == "" {
			db, ok := b.(backend.DockerfileBuilder)
			if !ok {
				return Info{}, apperr.Invalid("", "backend %s cannot build a Dockerfile", b.Name())
			}
			spec.Image = "paddock/dev-" + strings.ToLower(sb.Name) + ":latest"
			progress("building " + dc.Dockerfile)
			if err := db.BuildDockerfile(ctx, dc.Context, dc.Dockerfile, spec.Image, progress); err != nil {
				return Info{}, err
			}
		}
	}
	if err := b.Create(ctx, spec); err != nil {
		return Info{}, fmt.Errorf("create sandbox %q: %w", sb.Name, err)
	}
	sb.Image = spec.Image // recorded with the state below: a snapshot's restore runs it again
	progress("starting sandbox and its guest")
	if err := b.Start(ctx, id); err != nil {
		return Info{}, fmt.Errorf("start sandbox %q: %w", sb.Name, err)
	}
	if limits, note := s.limits(ctx, b, id); limits == nil && note != "" {
		progress("warning: " + note)
	}
	c, err := s.client(ctx, sb)
	if err != nil {
		return Info{}, err
	}
	if bundle != nil {
		progress("copying the repository into /workspace")
		if err := seed(ctx, c, req, bundle); err != nil {
			return Info{}, fmt.Errorf("seed /workspace of %q: %w", sb.Name, err)
		}
	}
	warnings, err := mcp.Write(ctx, c, s.opts.MCP, mcp.Proxy{Port: sb.CredsPort, Token: sb.CredsToken})
	if err != nil {
		return Info{}, fmt.Errorf("configure MCP servers in %q: %w", sb.Name, err)
	}
	for _, w := range warnings {
		progress("warning: " + w)
	}
	if req.Seeded != nil {
		if err := req.Seeded(ctx, sb, c, progress); err != nil {
			return Info{}, err
		}
	}
	if dc := req.Devcontainer; dc != nil {
		if len(dc.PostCreate) > 0 {
			progress("running postCreateCommand")
			var out strings.Builder
			code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: dc.PostCreate, Stdout: &out, Stderr: &out})
			if err != nil || code != 0 {
				progress(fmt.Sprintf("warning: postCreateCommand failed (exit %d, %v): %s", code, err, strings.TrimSpace(tailString(out.String()))))
			}
		}
		if len(dc.ForwardPorts) > 0 {
			ports := make([]string, len(dc.ForwardPorts))
			for i, p := range dc.ForwardPorts {
				ports[i] = fmt.Sprint(p)
			}
			s.Emit(ctx, sb, events.Event{Kind: "forward-ports", Detail: strings.Join(ports, ","), Attrs: map[string]string{"ports": strings.Join(ports, ",")}})
		}
	}
	sb.State = "running"
	if err := s.opts.Store.UpdateSandbox(ctx, sb); err != nil {
		return Info{}, err
	}
	s.Emit(ctx, sb, events.Event{Kind: "created", Detail: "from " + orNone(req.SourcePath),
		Attrs: map[string]string{"backend": sb.Backend, "source_path": sb.SourcePath, "network": sb.Network}})
	return s.info(ctx, sb), nil
}

// checkRuntime resolves the runtime a new sandbox runs under (the request's, else the
// backend's default) and checks the backend can use it here, before anything is made.
func checkRuntime(ctx context.Context, b backend.Backend, runtime string, openNetwork bool) (string, error) {
	rs, ok := b.(backend.RuntimeSelector)
	if !ok || !b.Describe().Runtimes {
		if runtime != "" {
			with := backend.Which(func(d backend.Description) bool { return d.Runtimes })
			return "", apperr.Invalid("use --backend "+with+" (`paddock up --backend "+with+" --runtime "+runtime+"`), or leave out --runtime",
				"--runtime is for backends that run containers under an OCI runtime (%s), not %s", with, b.Name())
		}
		return "", nil
	}
	if runtime == "" {
		runtime = rs.DefaultRuntime()
	}
	if runtime == "" {
		return "", nil
	}
	if err := rs.CheckRuntime(ctx, runtime, openNetwork); err != nil {
		var ue *backend.UnavailableError
		if errors.As(err, &ue) {
			return "", apperr.Unavailable(ue.Fix, "runtime %s on %s: %s", runtime, b.Name(), ue.Reason)
		}
		return "", fmt.Errorf("check runtime %s on %s: %w", runtime, b.Name(), err)
	}
	return runtime, nil
}

const seedBundle = "paddock-seed.bundle"

// seedScript clones the bundle into /workspace, every ref it holds (a host repo's
// branches and tags, or all of a snapshot's first bundle). Every value arrives in the
// environment, never spliced into the script.
const seedScript = `set -e
command -v git >/dev/null || { echo "the sandbox has no git: use a root filesystem with git installed" >&2; exit 127; }
cd /workspace
trap 'rm -f /tmp/` + seedBundle + `' EXIT
# Detached, the branch git init names stays unborn: one no repository has, so that
# fetching every branch does not refuse to write the one checked out.
git init -q -b "${PADDOCK_BRANCH:-paddock-detached-seed}" .
if [ -n "$PADDOCK_BRANCH" ]; then
  git fetch -q --update-head-ok /tmp/` + seedBundle + ` '+refs/*:refs/*'
  git reset -q --hard "refs/heads/$PADDOCK_BRANCH"
else
  git fetch -q /tmp/` + seedBundle + ` '+refs/*:refs/*' HEAD
  git checkout -q --detach "$PADDOCK_COMMIT"
fi
test "$(git rev-parse HEAD)" = "$PADDOCK_COMMIT"
if [ -n "$PADDOCK_ORIGIN" ]; then git remote add origin "$PADDOCK_ORIGIN"; fi
git config user.name "${PADDOCK_GIT_NAME:-paddock agent}"
git config user.email "${PADDOCK_GIT_EMAIL:-agent@paddock.invalid}"
mkdir -p /workspace/deliverables
`

func seed(ctx context.Context, c *guestclient.Client, req CreateRequest, bundle io.Reader) error {
	if _, err := c.WriteFile(ctx, "/tmp", seedBundle, 0o600, false, bundle); err != nil {
		return fmt.Errorf("copy the git bundle in: %w", err)
	}
	var out strings.Builder
	code, err := c.Exec(ctx, guestclient.ExecOptions{
		Argv: []string{"sh", "-c", seedScript},
		Env: []string{"PADDOCK_BRANCH=" + req.Branch, "PADDOCK_COMMIT=" + req.Commit, "PADDOCK_ORIGIN=" + gitsrc.WithoutCredentials(req.Origin),
			"PADDOCK_GIT_NAME=" + req.GitName, "PADDOCK_GIT_EMAIL=" + req.GitEmail},
		Stdout: &out, Stderr: &out,
	})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("git in the sandbox failed (exit %d): %s", code, strings.TrimSpace(out.String()))
	}
	return nil
}

func tailString(s string) string {
	if len(s) > 400 {
		return s[len(s)-400:]
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "no source"
	}
	return s
}

// npmPackages are the npm packages a machine-provisioning backend installs: the agents'
// CLIs and the packages the config's stdio MCP servers run with npx.
func (s *Service) npmPackages(names []string) []string {
	var out []string
	for _, name := range names {
		if a, err := agents.Get(name); err == nil && a.Package != "" {
			out = append(out, a.Package)
		}
	}
	return append(out, mcp.NPXPackages(s.opts.MCP)...)
}

// cloneTimeout bounds the daemon's clone of a git URL: a server that stops answering
// must not hold the request for ever.
const cloneTimeout = 15 * time.Minute

// CloneSource clones req.SourceURL on this host (or fetches into an earlier clone of it)
// for a request with Clone set, fills in the commit, branch and git identity from the
// clone, and returns its bundle to seed the workspace with. Only network URLs are
// taken (https, ssh, git): a URL is the sender's, not a way to read this host's disk.
func (s *Service) CloneSource(ctx context.Context, req *CreateRequest, progress func(string)) (io.ReadCloser, func() error, error) {
	if req.SourceURL == "" {
		return nil, nil, apperr.Invalid("", "clone needs a source_url")
	}
	if s.opts.ReposDir == "" {
		return nil, nil, apperr.Unavailable("", "this daemon keeps no clones")
	}
	if req.Name == "" {
		req.Name = NameFor(req.SourceURL)
	}
	if err := ValidateName(req.Name); err != nil {
		return nil, nil, apperr.Invalid("", "%v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, cloneTimeout)
	defer cancel()
	dir := filepath.Join(s.opts.ReposDir, req.Name)
	if err := gitsrc.Clone(cctx, req.SourceURL, dir, gitsrc.CloneOptions{Remote: true, Progress: progress}); err != nil {
		return nil, nil, err
	}
	src, err := gitsrc.Describe(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	req.Commit, req.Branch, req.Origin = src.Commit, src.Branch, req.SourceURL
	if req.GitName == "" {
		req.GitName, req.GitEmail = src.GitName, src.GitEmail
	}
	req.SourcePath = ""
	return gitsrc.Bundle(ctx, dir)
}
