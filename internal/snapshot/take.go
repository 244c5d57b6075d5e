package snapshot

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/snapshot/storage"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/tailbuf"
	"github.com/paddockhq/paddock/internal/termtext"
)

// Options are the snapshot settings ([backup] in the config).
type Options struct {
	// Keep is how many snapshots of a sandbox are kept (the newest); MaxAge drops older
	// ones. Zero keeps all.
	Keep   int
	MaxAge time.Duration
	// MaxFileBytes leaves out of the workspace's uncommitted work an untracked file
	// larger than this (build outputs, binaries); deliverables are kept whole. Zero: no
	// limit.
	MaxFileBytes int64
	// MaxWholeBytes bounds what one snapshot takes of the directories it keeps whole
	// (deliverables, agents' conversations), in bytes of file content: a file that
	// would pass it is left out, unread. A sparse file of a terabyte costs the sandbox
	// nothing, and would be copied to the host, and stored, whole. Zero: no limit.
	MaxWholeBytes int64
}

// Service takes and restores snapshots.
type Service struct {
	sandboxes *sandbox.Service
	sessions  *session.Service
	store     storage.Store
	opts      Options
	log       *slog.Logger

	mu    sync.Mutex
	locks map[string]*sync.Mutex
	// gc keeps blob collection (write) from removing the blobs of snapshots being taken
	// or restored (read), whose manifests are not in the store yet.
	gc sync.RWMutex
}

// New returns a Service keeping snapshots in st.
func New(sandboxes *sandbox.Service, sessions *session.Service, st storage.Store, opts Options, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{sandboxes: sandboxes, sessions: sessions, store: st, opts: opts, log: log, locks: map[string]*sync.Mutex{}}
}

// lock serializes the snapshots of one sandbox.
func (s *Service) lock(name string) func() {
	s.mu.Lock()
	l, ok := s.locks[name]
	if !ok {
		l = &sync.Mutex{}
		s.locks[name] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// TakeOptions is wire.SnapshotRequest.
type TakeOptions = wire.SnapshotRequest

// Take snapshots a running sandbox.
func (s *Service) Take(ctx context.Context, name string, opts TakeOptions, progress func(string)) (*Manifest, error) {
	if progress == nil {
		progress = func(string) {}
	}
	defer s.lock(name)()
	start := time.Now()
	sb, err := s.sandboxes.Record(ctx, name)
	if err != nil {
		return nil, err
	}
	c, err := s.sandboxes.Client(ctx, name)
	if err != nil {
		return nil, err
	}
	sessions, err := s.sandboxes.Store().ListSessions(ctx, sb.ID)
	if err != nil {
		return nil, err
	}
	m := &Manifest{ID: newID(start), Sandbox: sb.Name, Note: opts.Note, Created: start.UTC(), Meta: metaOf(sb)}
	rules, err := s.sandboxes.Net().List(ctx, sb.Name)
	if err != nil {
		return nil, err
	}
	for _, r := range rules {
		if r.Scope == sb.Name {
			m.Meta.NetRules = append(m.Meta.NetRules, NetRule{Pattern: r.Pattern, Action: r.Action})
		}
	}
	if info, err := s.sandboxes.Get(ctx, sb.Name); err == nil {
		m.Meta.Limits = info.Limits
	}
	m.Sessions = s.sessionsOf(ctx, sb.Name, sessions)
	m.Roots = roots(ctx, c, sessions)
	if opts.DryRun {
		return m, s.plan(ctx, c, m)
	}
	if err := s.take(ctx, c, m, progress); err != nil {
		return nil, err
	}
	s.sandboxes.Emit(ctx, sb, events.Event{Kind: "snapshot", Detail: fmt.Sprintf("%s (%s, %s new)", m.ID, termtext.Size(m.Size), termtext.Size(m.Uploaded)),
		Attrs: map[string]string{"id": m.ID, "size": strconv.FormatInt(m.Size, 10), "uploaded": strconv.FormatInt(m.Uploaded, 10)}})
	if _, err := s.Prune(ctx, sb.Name); err != nil {
		s.log.Warn("prune snapshots", "sandbox", sb.Name, "err", err)
	}
	return m, nil
}

// take puts the blobs, then the manifest, in the store.
func (s *Service) take(ctx context.Context, c *guestclient.Client, m *Manifest, progress func(string)) error {
	s.gc.RLock()
	defer s.gc.RUnlock()
	t := &taking{s: s, c: c, m: m, progress: progress, tarOut: c.TarOutMax}
	if err := t.git(ctx); err != nil {
		return err
	}
	for _, root := range m.Roots {
		progress("keeping " + root)
		if err := t.root(ctx, root); err != nil {
			return fmt.Errorf("keep %s: %w", root, err)
		}
	}
	seen := map[string]bool{}
	for _, b := range blobs(m) {
		if !seen[b.SHA256] { // two files with the same bytes are one blob
			seen[b.SHA256] = true
			m.Size += b.Size
		}
	}
	m.TookMS = time.Since(m.Created).Milliseconds()
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	// The manifest goes last: until it is in, the snapshot does not exist.
	if err := s.store.Put(ctx, manifestKey(m.Sandbox, m.ID), bytes.NewReader(data), int64(len(data))); err != nil {
		return fmt.Errorf("write the snapshot's manifest: %w", err)
	}
	return nil
}

func metaOf(sb store.Sandbox) Meta {
	var agentNames []string
	if sb.Agents != "" {
		agentNames = strings.Split(sb.Agents, ",")
	}
	return Meta{Backend: sb.Backend, Rootfs: sb.Rootfs, Image: sb.Image, Runtime: sb.Runtime, Network: sb.Network, Agents: agentNames,
		SyncMode: sb.SyncMode, SourcePath: sb.SourcePath, SourceURL: sb.SourceURL, IdleStopSeconds: int64(sb.IdleStop / time.Second)}
}

// sessionsOf lists the sandbox's sessions with their status, as far as it can be read.
func (s *Service) sessionsOf(ctx context.Context, name string, recs []store.Session) []Session {
	status := map[string]string{}
	if infos, err := s.sessions.List(ctx, name); err == nil {
		for _, in := range infos {
			status[in.Name] = in.Status
		}
	}
	out := make([]Session, 0, len(recs))
	for _, se := range recs {
		out = append(out, Session{Name: se.Name, Agent: se.Agent, ResumeID: se.ResumeID, Command: se.Command, Dir: se.Dir, Status: status[se.Name]})
	}
	return out
}

// roots are the directories kept whole: deliverables, and the conversations of every
// agent the sandbox runs, where they exist.
func roots(ctx context.Context, c *guestclient.Client, sessions []store.Session) []string {
	dirs := []string{inside.Deliverables}
	for _, se := range sessions {
		if a, err := agents.Get(se.Agent); err == nil {
			dirs = append(dirs, a.StateDirs()...)
		}
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	var out []string
	for _, d := range dirs {
		if fi, err := c.Stat(ctx, "/", d); err == nil && fi.GetType() == "dir" {
			out = append(out, d)
		}
	}
	return out
}

// taking is one snapshot being taken.
type taking struct {
	s        *Service
	c        *guestclient.Client
	m        *Manifest
	progress func(string)
	// whole is the bytes of file content taken so far from the directories kept whole.
	whole int64
	// tarOut is the guest's TarOutMax (another in tests).
	tarOut func(ctx context.Context, root, path string, maxBytes int64, w io.Writer) error
}

// headScript prints the checked-out branch (or nothing), the HEAD commit, and every ref
// with its commit.
const headScript = `git symbolic-ref -q HEAD || echo
git rev-parse HEAD
git for-each-ref --format='%(objectname) %(refname)'
`

// git records the uncommitted work, then bundles what the store does not hold yet.
func (t *taking) git(ctx context.Context) error {
	t.progress("recording the uncommitted work")
	exec := t.exec(t.s.wipEnv())
	_, big, err := gitsync.RecordWIP(ctx, exec)
	if err != nil {
		return err
	}
	for _, p := range big {
		if !inDeliverables(p) { // kept whole (as far as max_whole_mb allows)
			t.m.Left = append(t.m.Left, Left{Path: p, Why: t.s.overFile(), OverLimit: true})
		}
	}
	out, stderr, code, err := exec(ctx, []string{"sh", "-c", headScript}, gitsync.SandboxGitEnv)
	if err != nil || code != 0 {
		return fmt.Errorf("read the workspace's refs: exit %d: %v %s", code, err, stderr)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 {
		return fmt.Errorf("read the workspace's refs: %q", out)
	}
	g := &t.m.Git
	g.Branch, g.Commit, g.Refs = lines[0], lines[1], map[string]string{}
	for _, l := range lines[2:] {
		if sha, ref, ok := strings.Cut(l, " "); ok {
			g.Refs[ref] = sha
		}
	}
	g.WIP = g.Refs["refs/paddock-wip/"+gitsync.WIPBranch]
	if err := t.worktrees(ctx); err != nil {
		return err
	}

	prev, err := t.s.Newest(ctx, t.m.Sandbox)
	if err != nil {
		return err
	}
	var have []string
	// A chain that has grown long starts again with a whole bundle, so that a restore
	// after many scheduled snapshots does not unbundle them all.
	if prev != nil && len(prev.Git.Bundles) < maxChain && t.s.hasBlobs(ctx, prev) {
		g.Bundles = prev.Git.Bundles
		for _, sha := range prev.Git.Refs {
			have = append(have, sha)
		}
	}
	t.progress("bundling the repository")
	b, err := t.bundle(ctx, have)
	if err != nil {
		return err
	}
	if b != nil {
		b.Branch, b.Commit = g.Branch, g.Commit
		g.Bundles = append(g.Bundles, *b)
	}
	return t.modes(ctx)
}

// maxChain is how many bundles a snapshot's chain may hold before the next snapshot
// bundles everything again.
const maxChain = 16

// worktreeScript lists the workspace's worktrees: directory, then branch or detached commit.
const worktreeScript = `git worktree list --porcelain | awk '/^worktree /{d=substr($0,10)} /^HEAD /{h=$2} /^branch /{b=$2} /^$/{if (d!="") print d" "h" "b; d="";h="";b=""} END{if (d!="") print d" "h" "b}'`

func (t *taking) worktrees(ctx context.Context) error {
	out, stderr, code, err := t.exec(nil)(ctx, []string{"sh", "-c", worktreeScript}, gitsync.SandboxGitEnv)
	if err != nil || code != 0 {
		return fmt.Errorf("list the worktrees: exit %d: %v %s", code, err, stderr)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || !strings.HasPrefix(f[0], inside.Worktrees+"/") {
			continue
		}
		w := Worktree{Dir: f[0], Commit: f[1]}
		if len(f) > 2 {
			w.Branch = f[2]
		}
		w.WIP = t.m.Git.Refs["refs/paddock-wip/"+gitsync.WIPBranch+"-"+strings.TrimPrefix(f[0], inside.Worktrees+"/")]
		t.m.Git.Worktrees = append(t.m.Git.Worktrees, w)
	}
	return nil
}

// bundleScript bundles every ref, leaving out what the commits given as arguments
// already hold (those of an earlier snapshot that the repository still has). With
// nothing new it prints nothing and succeeds.
const bundleScript = `set -e
have=""
for c in "$@"; do git cat-file -e "$c^{commit}" 2>/dev/null && have="$have ^$c"; done
new=$(git rev-list --all $have | head -1)
[ -n "$new" ] || [ -z "$have" ] || exit 0
git bundle create -q - --all $have
`

// bundle streams a bundle of what is new out of the sandbox into the store.
func (t *taking) bundle(ctx context.Context, have []string) (*Bundle, error) {
	slices.Sort(have)
	have = slices.Compact(have)
	tmp, err := os.CreateTemp("", "paddock-bundle-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	var stderr tailbuf.Buffer
	code, err := t.c.Exec(ctx, guestclient.ExecOptions{Argv: append([]string{"sh", "-c", bundleScript, "sh"}, have...),
		Env: gitsync.SandboxGitEnv, Dir: inside.Workspace, Stdout: io.MultiWriter(tmp, h), Stderr: &stderr})
	if err != nil {
		return nil, fmt.Errorf("bundle the repository: %w", err)
	}
	if code != 0 {
		return nil, fmt.Errorf("bundle the repository: exit %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	size, err := tmp.Seek(0, io.SeekEnd)
	if err != nil || size == 0 {
		return nil, err
	}
	blob := Blob{SHA256: hex.EncodeToString(h.Sum(nil)), Size: size}
	if err := t.put(ctx, blob, tmp); err != nil {
		return nil, err
	}
	return &Bundle{Blob: blob}, nil
}

// modesScript lists the workspace's files and directories with their permissions.
const modesScript = `find . \( -path ./.git -o -path ./.worktrees \) -prune -o \( -type f -o -type d \) -printf '%y %m %P\0'`

// modes keeps the permissions git does not: those other than 644 and 755 for files
// (git keeps which of the two) and 755 for directories.
func (t *taking) modes(ctx context.Context) error {
	out, stderr, code, err := t.c.Output(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", modesScript}, Dir: inside.Workspace}, maxListing)
	if err != nil || code != 0 {
		return fmt.Errorf("list the workspace's modes: exit %d: %v %s", code, err, stderr)
	}
	var keep bytes.Buffer
	for _, rec := range strings.Split(out, "\x00") {
		kind, rest, _ := strings.Cut(rec, " ")
		mode, p, ok := strings.Cut(rest, " ")
		if !ok {
			continue
		}
		if p == "" {
			p = "." // /workspace itself
		}
		if (kind == "f" && (mode == "644" || mode == "755")) || (kind == "d" && mode == "755") {
			continue
		}
		keep.WriteString(mode + " " + p + "\x00")
	}
	if keep.Len() == 0 {
		return nil
	}
	sum := sha256.Sum256(keep.Bytes())
	blob := Blob{SHA256: hex.EncodeToString(sum[:]), Size: int64(keep.Len())}
	if err := t.put(ctx, blob, bytes.NewReader(keep.Bytes())); err != nil {
		return err
	}
	t.m.Git.Modes = &blob
	return nil
}

// root keeps a directory whole: each regular file a blob, with directories and links,
// as far as MaxWholeBytes allows; the guest leaves out, unread, a file that would pass it.
func (t *taking) root(ctx context.Context, root string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	limit := t.s.opts.MaxWholeBytes
	var ask int64 // the guest's bound: 0 asks for none, so a spent one asks for 1
	if limit > 0 {
		ask = max(limit-t.whole, 1)
	}
	start := t.whole
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(t.tarOut(ctx, "/", root, ask, pw)) }()
	defer pr.Close()
	tr := tar.NewReader(pr)
	parent := path.Dir(root)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		f := File{Path: path.Join(parent, h.Name), Mode: uint32(h.FileInfo().Mode().Perm())}
		switch h.Typeflag {
		case tar.TypeDir:
			f.Type = "d"
		case tar.TypeSymlink:
			f.Type, f.Link = "l", h.Linkname
		case tar.TypeReg:
			f.Type = "f"
			if _, omitted := h.PAXRecords[guestproto.OmittedRecord]; omitted {
				t.m.Left = append(t.m.Left, Left{Path: f.Path, Why: t.overWhole(), OverLimit: true})
				continue
			}
			if limit > 0 && h.Size > ask-(t.whole-start) { // what the guest had left of ask
				// A guest that does not know the bound sent it whole: it is not read,
				// and nor is the rest of the archive.
				t.m.Left = append(t.m.Left, Left{Path: f.Path, Why: t.overWhole(), OverLimit: true},
					Left{Path: root, Why: "what its archive held after " + f.Path + ": " + t.overWhole(), OverLimit: true})
				return nil
			}
			t.whole += h.Size
			blob, err := t.file(ctx, tr)
			if err != nil {
				return fmt.Errorf("%s: %w", f.Path, err)
			}
			f.SHA256, f.Size = blob.SHA256, blob.Size
		default:
			t.m.Left = append(t.m.Left, Left{Path: f.Path, Why: "not a file, a directory or a link"})
			continue
		}
		t.m.Files = append(t.m.Files, f)
	}
}

// overWhole says why a file of a directory kept whole was left out.
func (t *taking) overWhole() string {
	return fmt.Sprintf("over %s kept whole in one snapshot (max_whole_mb); raise it to keep the file", termtext.Size(t.s.opts.MaxWholeBytes))
}

// file spools one file to learn its hash, then puts it in the store unless it is there.
func (t *taking) file(ctx context.Context, r io.Reader) (Blob, error) {
	tmp, err := os.CreateTemp("", "paddock-file-")
	if err != nil {
		return Blob{}, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), r)
	if err != nil {
		return Blob{}, err
	}
	blob := Blob{SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}
	return blob, t.put(ctx, blob, tmp)
}

// put stores a blob from r (a file rewound here, or a reader at its start).
func (t *taking) put(ctx context.Context, b Blob, r io.Reader) error {
	if f, ok := r.(*os.File); ok {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	uploaded, err := storage.PutBlob(ctx, t.s.store, b.SHA256, b.Size, r)
	if err != nil {
		return fmt.Errorf("store blob %s: %w", b.SHA256[:12], err)
	}
	if uploaded {
		t.m.Uploaded += b.Size
	}
	return nil
}

// exec runs commands in the workspace, with env added.
func (t *taking) exec(env []string) gitsync.Exec {
	return func(ctx context.Context, argv, more []string) (string, string, int, error) {
		return t.c.Output(ctx, guestclient.ExecOptions{Argv: argv, Env: append(append([]string(nil), more...), env...),
			Dir: inside.Workspace}, maxListing)
	}
}

// maxListing is the most of a listing a snapshot reads from the sandbox (its refs, its
// files' modes, what its rules leave out) that it takes: a workspace of a million files
// lists about 100 MiB.
const maxListing = 256 << 20

// wipEnv has the uncommitted work follow a snapshot's rules: big new files left out, and
// the project's .paddock-backup (gitsync.WIPRules).
func (s *Service) wipEnv() []string {
	env := []string{"PADDOCK_WIP_BACKUP=1"}
	if s.opts.MaxFileBytes > 0 {
		env = append(env, "PADDOCK_WIP_MAX_BYTES="+strconv.FormatInt(s.opts.MaxFileBytes, 10))
	}
	return env
}

// planScript applies a snapshot's rules to a throwaway index, saying what they leave
// out and take back (WIPRules), then lists what git ignores.
const planScript = gitsync.WIPRules + "set -e\n" + gitsync.WIPIndex + `git status --porcelain=v1 -z --ignored | tr '\0' '\n' | sed -n 's/^!! /ignored /p'
`

// plan fills a dry run's manifest: what goes in, and what is left out and why.
func (s *Service) plan(ctx context.Context, c *guestclient.Client, m *Manifest) error {
	out, stderr, code, err := c.Output(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", planScript},
		Env: append(s.wipEnv(), gitsync.SandboxGitEnv...), Dir: inside.Workspace}, maxListing)
	if err != nil || code != 0 {
		return fmt.Errorf("list the workspace: exit %d: %v %s", code, err, stderr)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		kind, p, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		full := path.Join(inside.Workspace, strings.TrimSuffix(p, "/"))
		switch {
		case (kind == "ignored" || kind == "big") && inDeliverables(full):
			// deliverables are kept whole, ignored or not, big or not
		case kind == "ignored":
			m.Left = append(m.Left, Left{Path: full, Why: "ignored by git (.gitignore): build outputs, dependencies, caches"})
		case kind == "big":
			m.Left = append(m.Left, Left{Path: full, Why: s.overFile(), OverLimit: true})
		case kind == "excluded":
			m.Left = append(m.Left, Left{Path: full, Why: ".paddock-backup leaves it out"})
		case kind == "included":
			m.Included = append(m.Included, Left{Path: full, Why: ".paddock-backup takes it back, though git ignores it"})
		}
	}
	for _, root := range m.Roots {
		files, err := c.List(ctx, "/", root)
		if err != nil {
			return err
		}
		for _, fi := range files {
			m.Files = append(m.Files, File{Path: path.Join(root, fi.GetName()), Size: fi.GetSize()})
		}
	}
	return nil
}

func inDeliverables(p string) bool {
	return p == inside.Deliverables || strings.HasPrefix(p, inside.Deliverables+"/")
}

// overFile says why a file over max_file_mb was left out of the uncommitted work.
func (s *Service) overFile() string {
	return fmt.Sprintf("over %s (max_file_mb): a new file is left out, a tracked one kept as last committed; put it in deliverables/ to keep it", termtext.Size(s.opts.MaxFileBytes))
}

// newID is a snapshot id: its UTC time and a random suffix.
func newID(t time.Time) string {
	b := make([]byte, 3)
	rand.Read(b)
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}
