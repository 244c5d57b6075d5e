package snapshot

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/snapshot/storage"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/termtext"
)

// RestoreOptions is wire.RestoreRequest.
type RestoreOptions = wire.RestoreRequest

// Restore makes a new sandbox from a snapshot (ref: its id, or a sandbox's name for its
// newest): the repository with every ref, the uncommitted work in the working tree as
// it was, the modes, deliverables and the agents' conversations, then the sessions,
// each resuming its conversation. Nothing is made when a blob is missing or corrupt;
// a failure after the sandbox is made removes it.
func (s *Service) Restore(ctx context.Context, ref string, opts RestoreOptions, progress func(string)) (sandbox.Info, *Manifest, error) {
	if progress == nil {
		progress = func(string) {}
	}
	s.gc.RLock()
	defer s.gc.RUnlock()
	m, err := s.Find(ctx, ref)
	if err != nil {
		return sandbox.Info{}, nil, err
	}
	if missing := s.missing(ctx, m); len(missing) > 0 {
		return sandbox.Info{}, m, apperr.Unavailable("take a new snapshot, or restore an older one (`paddock snapshots "+m.Sandbox+"`)",
			"snapshot %s cannot be restored: %s is missing %d blob(s), first blobs/sha256/%s (%d bytes)", m.ID, s.store, len(missing), missing[0].SHA256, missing[0].Size)
	}
	if len(m.Git.Bundles) == 0 {
		return sandbox.Info{}, m, fmt.Errorf("snapshot %s holds no repository", m.ID)
	}
	if err := checkRoots(m); err != nil {
		return sandbox.Info{}, m, fmt.Errorf("snapshot %s: %w", m.ID, err)
	}
	req := s.createRequest(m, opts)
	progress(fmt.Sprintf("restoring snapshot %s of %s (%s) as %s", m.ID, m.Sandbox, termtext.Size(m.Size), req.Name))
	first, err := storage.GetBlob(ctx, s.store, m.Git.Bundles[0].SHA256)
	if err != nil {
		return sandbox.Info{}, m, err
	}
	// The work and the session records go in while the sandbox is still being made: a
	// failure, or a daemon that dies meanwhile, leaves no half-restored sandbox.
	req.Seeded = func(ctx context.Context, sb store.Sandbox, c *guestclient.Client, progress sandbox.Progress) error {
		if err := s.fill(ctx, c, m, progress); err != nil {
			return fmt.Errorf("restore snapshot %s: %w", m.ID, err)
		}
		for _, r := range m.Meta.NetRules {
			if _, err := s.sandboxes.Net().Set(ctx, sb.Name, r.Pattern, r.Action); err != nil {
				return fmt.Errorf("restore the egress rule %s %s: %w", r.Action, r.Pattern, err)
			}
		}
		return s.recordSessions(ctx, sb, m)
	}
	_, err = s.sandboxes.Create(ctx, req, first, progress)
	first.Close()
	if err != nil {
		return sandbox.Info{}, m, err
	}
	for _, se := range m.Sessions {
		progress(fmt.Sprintf("resuming session %s (%s)", se.Name, se.Agent))
		if _, err := s.sessions.Restart(ctx, req.Name, se.Name); err != nil {
			return sandbox.Info{}, m, fmt.Errorf("resume session %s (the sandbox is restored; `paddock restart %s/%s` tries again): %w", se.Name, req.Name, se.Name, err)
		}
	}
	info, err := s.sandboxes.Get(ctx, req.Name)
	return info, m, err
}

// createRequest makes the sandbox as the snapshot's was made, on the backend asked for;
// what belongs to one backend (a root filesystem, a runtime) goes only to that backend.
func (s *Service) createRequest(m *Manifest, opts RestoreOptions) sandbox.CreateRequest {
	req := sandbox.CreateRequest{SandboxCreateRequest: wire.SandboxCreateRequest{Name: opts.Name, Backend: opts.Backend,
		SourcePath: m.Meta.SourcePath, SourceURL: m.Meta.SourceURL, Network: m.Meta.Network, Agents: m.Meta.Agents,
		Commit: m.Git.Bundles[0].Commit, Branch: strings.TrimPrefix(m.Git.Bundles[0].Branch, "refs/heads/")}}
	if req.Name == "" {
		req.Name = m.Sandbox
	}
	if req.Backend == "" {
		req.Backend = m.Meta.Backend
	}
	if req.Backend == m.Meta.Backend {
		req.Rootfs, req.Runtime, req.Image = m.Meta.Rootfs, m.Meta.Runtime, m.Meta.Image
	}
	req.IdleStopSeconds = m.Meta.IdleStopSeconds
	if l := m.Meta.Limits; l != nil {
		req.CPUs, req.MemoryBytes, req.PidsLimit = l.CPUs, l.MemoryBytes, l.Pids
		if req.Backend == m.Meta.Backend {
			req.DiskBytes = l.DiskBytes // another backend may have no disk limit to set
		}
	}
	return req
}

// fill puts the snapshot's work into the new sandbox.
func (s *Service) fill(ctx context.Context, c *guestclient.Client, m *Manifest, progress sandbox.Progress) error {
	progress("restoring the repository and the uncommitted work")
	if err := s.restoreGit(ctx, c, m); err != nil {
		return err
	}
	if err := s.restoreModes(ctx, c, m); err != nil {
		return err
	}
	for _, root := range m.Roots {
		progress("restoring " + root)
		if err := s.restoreRoot(ctx, c, m, root); err != nil {
			return fmt.Errorf("restore %s: %w", root, err)
		}
	}
	return nil
}

// restoreScript adds the objects of each bundle after the first ($@), sets every ref as it was, checks out the
// branch (or the detached commit), then makes the working tree the uncommitted work with
// the index as HEAD's (what was staged comes back unstaged). Then each worktree, the
// same way. Values arrive in the environment; refs on stdin ("SHA REF" lines).
const restoreScript = `set -e
cd /workspace
for b in "$@"; do git bundle unbundle "$b" >/dev/null; rm -f "$b"; done
while read -r sha ref; do git update-ref "$ref" "$sha"; done
if [ -n "$PADDOCK_BRANCH" ]; then
  git symbolic-ref HEAD "$PADDOCK_BRANCH"
  git reset -q --hard "$PADDOCK_BRANCH"
else
  git checkout -q --detach "$PADDOCK_COMMIT"
fi
wip() { [ -z "$1" ] || { git read-tree -u --reset "$1" && git reset -q; }; }
wip "$PADDOCK_WIP"
printf '%s' "$PADDOCK_WORKTREES" | while IFS=' ' read -r dir branch commit w; do
  [ -n "$dir" ] || continue
  if [ -n "$branch" ]; then git worktree add -q -f "$dir" "${branch#refs/heads/}"; else git worktree add -q -f --detach "$dir" "$commit"; fi
  (cd "$dir" && wip "$w")
done
`

func (s *Service) restoreGit(ctx context.Context, c *guestclient.Client, m *Manifest) error {
	var files []string
	// The first bundle seeded the workspace (every ref it holds): the rest follow it.
	for i, b := range m.Git.Bundles[1:] {
		r, err := storage.GetBlob(ctx, s.store, b.SHA256)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("paddock-restore-%d.bundle", i)
		_, err = c.WriteFile(ctx, "/tmp", name, 0o600, false, r)
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("copy bundle %d in: %w", i, err)
		}
		files = append(files, "/tmp/"+name)
	}
	var refs strings.Builder
	names := make([]string, 0, len(m.Git.Refs))
	for ref := range m.Git.Refs {
		names = append(names, ref)
	}
	slices.Sort(names)
	for _, ref := range names {
		if strings.ContainsAny(ref, " \n") || strings.ContainsAny(m.Git.Refs[ref], " \n") {
			return fmt.Errorf("the snapshot names a bad ref %q", ref)
		}
		refs.WriteString(m.Git.Refs[ref] + " " + ref + "\n")
	}
	var worktrees strings.Builder
	for _, w := range m.Git.Worktrees {
		if !strings.HasPrefix(w.Dir, inside.Worktrees+"/") || strings.ContainsAny(w.Dir+w.Branch+w.Commit+w.WIP, " \n") {
			return fmt.Errorf("the snapshot names a bad worktree %q", w.Dir)
		}
		fmt.Fprintf(&worktrees, "%s %s %s %s\n", w.Dir, w.Branch, w.Commit, w.WIP)
	}
	env := append([]string{"PADDOCK_BRANCH=" + m.Git.Branch, "PADDOCK_COMMIT=" + m.Git.Commit, "PADDOCK_WIP=" + m.Git.WIP,
		"PADDOCK_WORKTREES=" + worktrees.String()}, gitsync.SandboxGitEnv...)
	var out strings.Builder
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: append([]string{"sh", "-c", restoreScript, "sh"}, files...),
		Env: env, Stdin: strings.NewReader(refs.String()), Stdout: &out, Stderr: &out})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("git in the sandbox failed (exit %d): %s", code, strings.TrimSpace(out.String()))
	}
	return nil
}

// restoreModes gives the workspace's files back the permissions git does not keep: one
// chmod per distinct mode, the paths on its stdin.
func (s *Service) restoreModes(ctx context.Context, c *guestclient.Client, m *Manifest) error {
	if m.Git.Modes == nil {
		return nil
	}
	r, err := storage.GetBlob(ctx, s.store, m.Git.Modes.SHA256)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(r)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	byMode := map[string]*strings.Builder{}
	for _, rec := range strings.Split(string(data), "\x00") {
		mode, p, ok := strings.Cut(rec, " ")
		if !ok || strings.Trim(mode, "01234567") != "" || len(mode) > 4 || p == "" {
			continue
		}
		if byMode[mode] == nil {
			byMode[mode] = &strings.Builder{}
		}
		byMode[mode].WriteString(p + "\x00")
	}
	for mode, paths := range byMode {
		var out strings.Builder
		code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", `xargs -0 -r chmod "$1" -- 2>&1 || true`, "sh", mode},
			Dir: inside.Workspace, Stdin: strings.NewReader(paths.String()), Stdout: &out, Stderr: &out})
		if err != nil || code != 0 {
			return fmt.Errorf("set modes %s: exit %d: %v %s", mode, code, err, out.String())
		}
	}
	return nil
}

// restoreRoot puts a kept directory back whole, through one archive of its files.
func (s *Service) restoreRoot(ctx context.Context, c *guestclient.Client, m *Manifest, root string) error {
	parent := path.Dir(root)
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.writeRoot(ctx, pw, m, root, parent)) }()
	defer pr.Close()
	// A root the sandbox made already (deliverables) is replaced by the snapshot's.
	if err := c.Remove(ctx, "/", root, true); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	_, _, err := c.TarIn(ctx, "/", parent, pr)
	return err
}

// writeRoot writes the archive of a root's files, each checked against its sha256.
func (s *Service) writeRoot(ctx context.Context, w io.Writer, m *Manifest, root, parent string) error {
	tw := tar.NewWriter(w)
	for _, f := range m.Files {
		if f.Path != root && !strings.HasPrefix(f.Path, root+"/") {
			continue
		}
		rel := strings.TrimPrefix(f.Path, parent+"/")
		h := &tar.Header{Name: rel, Mode: int64(f.Mode & 0o7777)}
		switch f.Type {
		case "d":
			h.Typeflag, h.Name = tar.TypeDir, rel+"/"
		case "l":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.Link
		case "f":
			h.Typeflag, h.Size = tar.TypeReg, f.Size
		default:
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if f.Type != "f" {
			continue
		}
		r, err := storage.GetBlob(ctx, s.store, f.SHA256)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, r)
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	return tw.Close()
}

// recordSessions records the snapshot's sessions in the new sandbox (started after).
func (s *Service) recordSessions(ctx context.Context, sb store.Sandbox, m *Manifest) error {
	for _, se := range m.Sessions {
		if err := sandbox.ValidateName(se.Name); err != nil {
			return fmt.Errorf("the snapshot names a bad session %q: %w", se.Name, err)
		}
		rec := store.Session{SandboxID: sb.ID, Name: se.Name, Agent: se.Agent, ResumeID: se.ResumeID, Command: se.Command, Dir: se.Dir}
		if err := s.sandboxes.Store().CreateSession(ctx, rec); err != nil {
			return err
		}
	}
	return nil
}

// checkRoots refuses a manifest (which anyone who can write the store can change) whose
// kept directories are not deliverables or an agent's conversations.
func checkRoots(m *Manifest) error {
	allowed := map[string]bool{inside.Deliverables: true}
	for _, name := range agents.Names() {
		a, _ := agents.Get(name)
		for _, d := range a.StateDirs() {
			allowed[d] = true
		}
	}
	for _, r := range m.Roots {
		if !allowed[r] {
			return fmt.Errorf("it names %q, which is neither deliverables nor an agent's conversations", r)
		}
	}
	for _, f := range m.Files {
		if path.Clean(f.Path) != f.Path || strings.Contains(f.Path, "/../") {
			return fmt.Errorf("it names a bad path %q", f.Path)
		}
	}
	return nil
}
