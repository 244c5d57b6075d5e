package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/paddockhq/paddock/internal/hostdisk"
	"github.com/paddockhq/paddock/internal/tailbuf"
)

// Stream runs argv in the sandbox, in /workspace, with env added to its environment,
// stdin as its input and its output written to stdout and stderr, and returns its exit
// code once all its output has been written.
type Stream func(ctx context.Context, argv, env []string, stdin io.Reader, stdout, stderr io.Writer) (int, error)

// serveScript runs in the sandbox, in the checkout $1 (/workspace), as one exec before
// upload-pack serves it: it records the uncommitted work of the checkout and of each of
// its worktrees on refs/paddock-wip/* (exit 3: no commits yet; exit 5: the recording
// failed), and then becomes git upload-pack. Nothing reaches stdout before upload-pack.
//
// Only work to record runs WIPScript ($WIP) with its temporary index. A checkout that one
// git status (without its optional index refresh, so the agent's index is never written)
// finds clean, with a commit, has its WIP ref follow HEAD instead: in the main checkout,
// on a branch, as a symbolic ref to that branch, which stays right through new commits, so
// a sync of clean work writes no ref at all (the ref's loose file is read to see that it
// is set); elsewhere, pointed at HEAD's commit. Anything else (no commit yet, a stale lock
// on the ref) goes to WIPScript, which says so or clears it.
const serveScript = wipBigNamed + `record() {
  st=$(git --no-optional-locks status --porcelain=v2 --branch --no-ahead-behind --untracked-files=normal --ignore-submodules=none 2>/dev/null) &&
  case "$st" in [!#]*|*"
"[!#]*|*"# branch.oid (initial)"*) false ;; esac && {
    br=${st#*"# branch.head "}; br=${br%%"
"*}
    if [ -d .git ] && [ "$br" != "(detached)" ]; then
      { read -r cur < ".git/refs/paddock-wip/$1"; } 2>/dev/null && [ "$cur" = "ref: refs/heads/$br" ] ||
        git symbolic-ref "refs/paddock-wip/$1" "refs/heads/$br" 2>/dev/null
    else
      git update-ref --no-deref "refs/paddock-wip/$1" HEAD 2>/dev/null
    fi
  } || { said=$(sh -c "$WIP" sh "$1") && printf '%s\n' "$said" | wip_big_named "$PWD" >&2; }
}
cd "$1" && record ` + WIPBranch + ` || { c=$?; [ "$c" = 3 ] && exit 3; echo "exit $c" >&2; exit 5; }
if [ -f .git ] || [ -d .git/worktrees ]; then
  git worktree list --porcelain | sed -n 's/^worktree //p' | while read -r dir; do
    case "$dir" in "$1"/.worktrees/*) (cd "$dir" && record "` + WIPBranch + `-${dir#"$1"/.worktrees/}") ;; esac
  done
fi
exec git upload-pack "$1"
`

// Exit codes of serveScript before upload-pack starts.
const (
	serveNoCommits = 3
	serveRecord    = 5
)

// Sync records the sandbox's uncommitted work and fetches every branch of the sandbox,
// and its WIP refs, into Namespace(sandbox), in one exec (serveScript) whose upload-pack
// host git reaches over git's fd:: transport: no remote helper process, and the only
// transport this fetch allows (GIT_ALLOW_PROTOCOL=fd). On the way, the sandbox's listing
// of its refs is read (refWatch): a branch whose name would clash with the WIP refs stops
// the fetch before git writes a ref, and the listing says where the refs now point. base
// is the commit the sandbox started from (to describe a new ref's changes); workspace is
// the checkout's path inside. Syncs of one sandbox into the repository take turns
// (syncLock). The Result says what is new since the last Sync reported, whatever moved the
// refs in between (Fetch, a plain git fetch into them: see reported.go), and this sync's
// refs are recorded as reported.
func (g *Git) Sync(ctx context.Context, sandbox, base, workspace string, stream Stream) (Result, error) {
	return g.fetch(ctx, sandbox, base, workspace, stream, true)
}

// Fetch is Sync for a reader of the work that is not a sync (`paddock diff`): the same
// refs fetched the same way, nothing described, and the last sync's report left as it is,
// so the next Sync still says what this fetch brought. Its Result holds only LeftOut.
func (g *Git) Fetch(ctx context.Context, sandbox, base, workspace string, stream Stream) (Result, error) {
	return g.fetch(ctx, sandbox, base, workspace, stream, false)
}

// fetch is Sync (report) or Fetch.
func (g *Git) fetch(ctx context.Context, sandbox, base, workspace string, stream Stream, report bool) (Result, error) {
	unlock, err := g.syncLock(ctx, sandbox)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	g.dropStaleRefLocks(sandbox)
	ns := Namespace(sandbox)
	ours, theirs, err := socketPair()
	if err != nil {
		return Result{}, err
	}
	hostCtx := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wrote   counter
		stderr  = tailbuf.Buffer{Max: 16 << 10}
		code    int
		served  error
		listing map[string]string
		serving = make(chan struct{})
		closing sync.Once
		log     *early // describe's log, started early; ended here unless describe takes it
	)
	defer func() {
		if log != nil {
			log.end()
		}
	}()
	hangUp := func() { closing.Do(func() { ours.Close() }) }
	watch := &refWatch{w: ours, cut: hangUp, room: hostdisk.Room(g.Repo), seen: func(refs map[string]string) error {
		names := make([]string, 0, len(refs))
		for name := range refs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if b, ok := strings.CutPrefix(name, "refs/heads/"); ok && (b == WIPBranch || strings.HasPrefix(b, WIPBranch+"/") || strings.HasPrefix(b, WIPBranch+"-")) {
				return &BranchClashError{Sandbox: sandbox, Branch: b}
			}
		}
		listing = refs
		return nil
	}}
	go func() {
		defer close(serving)
		env := append([]string{"WIP=" + WIPScript, "GIT_PROTOCOL=version=2", "PADDOCK_WIP_MAX_BYTES=" + strconv.Itoa(MaxWIPFileBytes)}, SandboxGitEnv...)
		code, served = stream(ctx, []string{"sh", "-c", serveScript, "sh", workspace}, env, ours, io.MultiWriter(&wrote, watch), &stderr)
		hangUp() // what upload-pack wrote is in the socket; git reads it, then the end
	}()
	// The exec is the longest way round: it starts first, then the host's own git
	// commands. core.hooksPath is wanted after the fetch (RunsOnHost) and asked meanwhile,
	// outside this call's cancellation.
	go g.hooksPath(hostCtx)

	before, err := g.Refs(ctx, ns)
	if err == nil && !report {
		err = g.reportedOnce(sandbox, before)
	}
	start := time.Now()
	if err == nil {
		// The log that describes what arrives starts as the fetch does, so that its
		// start is not added to the sync's time (a process start is much of a sync's
		// time); it reads its range once the objects are in.
		if report {
			log = g.startEarly(ctx, spanLogEarly...)
		}
		err = g.fetchFD(ctx, theirs, sandbox, "+refs/heads/*:"+ns+"*", "+refs/paddock-wip/*:"+ns+"*")
	} else {
		theirs.Close()
	}
	hangUp() // git is done with the stream: upload-pack sees its input end
	<-serving
	var noRoom *NoRoomError
	if errors.As(watch.err, &noRoom) {
		g.dropPartialPacks(hostCtx, start)
	}
	switch {
	case watch.err != nil:
		return Result{}, watch.err
	case served != nil:
		return Result{}, served
	case wrote.n == 0 && code == serveNoCommits:
		return Result{}, ErrNoCommits
	case wrote.n == 0 && code == serveRecord:
		return Result{}, fmt.Errorf("record the sandbox's uncommitted work: %s", strings.TrimSpace(stderr.String()))
	case err != nil && code != 0:
		return Result{}, fmt.Errorf("%w (git upload-pack in the sandbox: exit %d: %s)", err, code, strings.TrimSpace(stderr.String()))
	case err != nil:
		return Result{}, err
	case watch.state != watchPassing:
		return Result{}, errors.New("git fetched from the sandbox without its listing of refs going through")
	}
	// The listing says where the fetched refs now point; refs it does not name stay as
	// they were (nothing is pruned). It comes from the sandbox: a name git would not have
	// written, or an id that is not one, and git says instead.
	after := maps.Clone(before)
	for name, id := range listing {
		for _, prefix := range []string{"refs/heads/", "refs/paddock-wip/"} {
			if rest, ok := strings.CutPrefix(name, prefix); ok {
				if !refName(name) || !objectID(id) {
					after = nil
				} else if after != nil {
					after[ns+rest] = id
				}
			}
		}
	}
	if after == nil {
		if after, err = g.Refs(ctx, ns); err != nil {
			return Result{}, err
		}
	}
	if !report {
		return Result{LeftOut: bigPaths(stderr.String())}, nil
	}
	since, recorded := g.since(sandbox, before)
	res := g.describe(ctx, since, after, base, log)
	log = nil // describe ends it
	res.LeftOut = bigPaths(stderr.String())
	if !recorded || len(res.Updates) > 0 { // else the record says this already
		if err := g.report(sandbox, after); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// dropPartialPacks removes the packs that git was receiving into the repository when the
// fetch begun at start was stopped for room: index-pack leaves its temporary pack behind
// when its input is cut, and that pack is what filled the disk.
func (g *Git) dropPartialPacks(ctx context.Context, start time.Time) {
	dir, err := g.Run(ctx, "rev-parse", "--git-path", "objects/pack")
	if dir = strings.TrimSuffix(dir, "\n"); err != nil || dir == "" {
		return
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(g.Repo, dir)
	}
	partial, _ := filepath.Glob(filepath.Join(dir, "tmp_pack_*"))
	for _, p := range partial {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && !fi.ModTime().Before(start) {
			os.Remove(p)
		}
	}
}

// MaxWIPFileBytes is the largest new untracked file a sync records in its WIP commit
// (GitHub refuses files over 100 MB too); larger ones are left out before git reads
// them, and named (Result.LeftOut). A sparse file of terabytes costs the sandbox no
// disk: git would hash it for hours, and its object would come to the host. A file the
// agent commits comes whatever its size; sync --files copies one that is not in git.
const MaxWIPFileBytes = 100 << 20

// fetchFD runs git fetch of refspecs over the fd:: transport on conn, allowing no other
// transport: whatever the sandbox serves, host git talks the pack protocol on conn and
// nothing else. It closes conn (git holds its own copy while it runs).
//
// The fetch leaves the host repository's upkeep to the user's own git commands (which
// run it as they commit, merge or fetch): no `git maintenance run --auto` after it, so a
// sync never starts a repack of the user's repository. Every refspec forces, so whether an
// update is a fast-forward is not worked out (fetch.showForcedUpdates walks history), nor
// is git's advice about it given.
func (g *Git) fetchFD(ctx context.Context, conn *os.File, sandbox string, refspecs ...string) error {
	args := append([]string{"-c", "protocol.version=2", "-c", "fetch.showForcedUpdates=false", "-c", "advice.fetchShowForcedUpdates=false",
		"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--no-auto-maintenance",
		"fd::3/" + sandbox}, refspecs...)
	cmd := g.command(ctx, args...)
	cmd.Env = append(cmd.Env, "GIT_ALLOW_PROTOCOL=fd")
	cmd.ExtraFiles = []*os.File{conn} // fd 3
	stderr := tailbuf.Buffer{Max: 16 << 10}
	cmd.Stderr = &stderr
	err := cmd.Start()
	conn.Close()
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return fmt.Errorf("git fetch from sandbox %s: %w: %s", sandbox, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// objectID says whether s is a full object id (SHA-1 or SHA-256, lower-case hex).
func objectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// refName says whether git would take name as a ref's name (git check-ref-format): no
// control characters, spaces or ~^:?*[\, no "..", "@{" or "//", no component that starts
// with a dot or ends in .lock, and no trailing slash or dot.
func refName(name string) bool {
	if name == "" || strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") || name == "@" ||
		strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.Contains(name, "//") {
		return false
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f || strings.ContainsRune(" ~^:?*[\\", c) {
			return false
		}
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	return true
}

// socketPair returns the two ends of a unix stream socket pair: ours as a net.Conn (so a
// Close wakes a blocked Read), theirs as a file to hand to git.
func socketPair() (net.Conn, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socket pair for git: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "paddock-sync")
	defer f.Close()
	ours, err := net.FileConn(f)
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("socket pair for git: %w", err)
	}
	return ours, os.NewFile(uintptr(fds[1]), "git-sync"), nil
}

// counter counts the bytes written to it.
type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
