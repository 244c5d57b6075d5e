package bwrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/diskimage"
)

// The sizes of a sandbox's small tmpfs mounts. /tmp gets half the sandbox's memory (see
// tmpSize). What they hold is written by the sandbox's processes and so charged to its
// memory cgroup.
const (
	runSize = 64 << 20
	shmSize = 64 << 20
)

// tmpSize is the size of /tmp: half the sandbox's memory, as a tmpfs is by default half
// the host's.
func tmpSize(l backend.Limits) int64 { return l.MemoryBytes / 2 }

var (
	_ backend.LimitReader = (*Bwrap)(nil)
	_ backend.Reporter    = (*Bwrap)(nil)
)

// mountArgs are bwrap's arguments for /dev, /tmp and /run: each a tmpfs of a fixed size.
// /dev itself is made read-only, with a sized /dev/shm for shared memory, since bwrap
// cannot size the tmpfs it makes for /dev.
func (b *Bwrap) mountArgs(spec backend.Spec) []string {
	if b.noLimits {
		return []string{"--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run"}
	}
	size := func(n int64) string { return strconv.FormatInt(n, 10) }
	return []string{
		"--dev", "/dev", "--size", size(shmSize), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
		"--size", size(tmpSize(backend.LimitsFor(spec))), "--tmpfs", "/tmp",
		"--size", size(runSize), "--tmpfs", "/run",
	}
}

// rootArgs come after every mount: the tmpfs bwrap makes for / holds only mount points,
// and would otherwise be a writable tmpfs of unbounded size.
func (b *Bwrap) rootArgs() []string {
	if b.noLimits {
		return nil
	}
	return []string{"--remount-ro", "/"}
}

// newCgroup makes the cgroup a sandbox starts in, with the limits of its spec. It returns
// no cgroup (version 0), and no error, when sandboxes get none here: Limits says why.
func (b *Bwrap) newCgroup(ctx context.Context, spec backend.Spec) (sandboxCgroup, error) {
	if b.noLimits || b.cg.prepare() != nil {
		return sandboxCgroup{}, nil
	}
	cg := b.cg.sandbox(spec.ID)
	if err := cg.create(ctx, backend.LimitsFor(spec)); err != nil {
		return sandboxCgroup{}, err
	}
	return cg, nil
}

// Limits implements backend.LimitReader: it reads the sandbox's cgroup files, after
// checking that its init process is in the cgroup.
func (b *Bwrap) Limits(ctx context.Context, id backend.ID) (backend.Limits, error) {
	if _, err := b.readSpec(id); err != nil {
		return backend.Limits{}, err
	}
	ri, ok := b.readRun(id)
	if !ok || !ri.alive() {
		return backend.Limits{}, fmt.Errorf("limits of sandbox %s: %w", id, backend.ErrNotRunning)
	}
	if b.noLimits {
		return backend.Limits{}, &backend.LimitsNotEnforcedError{Reason: "limits are turned off"}
	}
	if err := b.cg.prepare(); err != nil {
		return backend.Limits{}, err
	}
	b.mu.Lock()
	known, ok := b.limits[id]
	b.mu.Unlock()
	if ok && known.start == ri.StartTime {
		return known.limits, nil
	}
	cg := b.cg.sandbox(id)
	for _, d := range cg.dirs {
		if !slices.Contains(cgroupPids(d), ri.ChildPID) {
			return backend.Limits{}, &backend.LimitsNotEnforcedError{Reason: "the sandbox was started without its cgroup",
				Fix: "stop it and start it again"}
		}
	}
	l, err := cg.read()
	if err != nil {
		return backend.Limits{}, fmt.Errorf("limits of sandbox %s: %w", id, err)
	}
	if l.DiskBytes, err = b.diskLimit(id); err != nil {
		return backend.Limits{}, err
	}
	b.mu.Lock()
	b.limits[id] = runLimits{start: ri.StartTime, limits: l}
	b.mu.Unlock()
	return l, nil
}

// Report implements backend.Reporter: whether sandboxes get limits here, and whether
// their workspaces get a disk quota.
func (b *Bwrap) Report(ctx context.Context) []backend.Finding {
	limits := backend.Finding{Topic: "limits", OK: true,
		Text: fmt.Sprintf("%s; each sandbox gets %s unless `up --cpus/--memory/--pids` say otherwise, and a /tmp of half its memory",
			b.cg.describe(), backend.LimitsFor(backend.Spec{}))}
	if err := b.cg.prepare(); err != nil {
		var ne *backend.LimitsNotEnforcedError
		if !errors.As(err, &ne) {
			ne = &backend.LimitsNotEnforcedError{Reason: err.Error()}
		}
		limits = backend.Finding{Topic: "limits", Fix: ne.Fix,
			Text: "not enforced: " + ne.Reason + "; a sandbox can take every processor, all the memory and every process slot of the host"}
	}
	return []backend.Finding{limits, diskQuota(b.dir)}
}

// diskQuota says whether sandboxes' workspaces can be bounded here (`up --disk`), and
// what the filesystem holding them is.
func diskQuota(dir string) backend.Finding {
	return backend.DiskFinding(dir, diskimage.Check(), fsOf(dir))
}

// fsOf names the filesystem holding dir, for the doctor: "ext4 (with project quotas)".
func fsOf(dir string) string {
	fsType, opts := mountOf(dir)
	if fsType == "" {
		return ""
	}
	if slices.ContainsFunc(opts, func(o string) bool { return o == "prjquota" || o == "pquota" || o == "pqnoenforce" }) {
		return fsType + " (with project quotas)"
	}
	return fsType
}

// mountOf returns the filesystem type and mount options of the mount holding path (or
// its nearest existing parent).
func mountOf(path string) (string, []string) {
	for {
		if _, err := os.Stat(path); err == nil || path == "/" || path == "." {
			break
		}
		path = filepath.Dir(path)
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", nil
	}
	best, fsType, opts := "", "", []string(nil)
	for _, line := range strings.Split(string(data), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		fields, postFields := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 6 || len(postFields) < 3 {
			continue
		}
		mp := backend.UnescapeMountinfo(fields[4])
		if (path == mp || strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best, fsType = mp, postFields[0]
			opts = append(strings.Split(fields[5], ","), strings.Split(postFields[2], ",")...)
		}
	}
	return fsType, opts
}
