package cli_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/clitest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// The time machine's workspace: 20,000 files of 25,000 random bytes (500 MB) in 200
// directories, committed in the sandbox as a project's files are; a turn's change is
// 40 of them rewritten (1 MB), 5 in each of 8 directories.
const (
	cpBenchFiles   = 20000
	cpBenchDirs    = 200
	cpBenchSize    = 25000
	cpBenchChanged = 40
	cpBenchSandbox = "big"
	cpBenchSession = "work"
)

// cpBenchGenerate writes the workspace and commits it, in one process in the sandbox,
// and prints the commit. The commit's automatic gc is off: started in the background by
// 20,000 new objects, it packs them while the benchmark runs, and a fork's copy of the
// repository then holds them twice.
var cpBenchGenerate = fmt.Sprintf(`python3 - <<'EOF'
import os
for i in range(%d):
    d = 'd%%03d' %% (i %% %d)
    os.makedirs(d, exist_ok=True)
    with open('%%s/f%%05d.bin' %% (d, i), 'wb') as f:
        f.write(os.urandom(%d))
EOF
git add -A && git -c gc.auto=0 -c user.name=b -c user.email=b@example.com commit -q -m workspace && git rev-parse HEAD`,
	cpBenchFiles, cpBenchDirs, cpBenchSize)

// cpBenchChange rewrites the turn's files with new random bytes: always the same ones,
// so that each measurement, whatever ran since, sees exactly them (1 MB) changed.
var cpBenchChange = fmt.Sprintf(`python3 -c "
import os
for k in range(%d):
    i = k // 5 + %d * (5 * (k // 5) + k %% 5)
    with open('d%%03d/f%%05d.bin' %% (i %% %d, i), 'wb') as f:
        f.write(os.urandom(%d))
"`, cpBenchChanged, cpBenchDirs, cpBenchDirs, cpBenchSize)

// cpBenchUntracked is the baseline with git's untracked cache and split index on its
// index: git add -A reads only the directories that changed and writes only the index
// entries that did (what a checkpoint could do; the figure says what it would save).
const cpBenchUntracked = `export GIT_INDEX_FILE="$(git rev-parse --git-path paddock-bench-index-split)"
git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.untrackedCache=true -c core.splitIndex=true add -A && git -c core.splitIndex=true write-tree >/dev/null`

// cpBenchBaseline is the same change recorded by plain git through the same guest exec:
// an index of its own, kept between runs, git's hooks and fsmonitor off.
const cpBenchBaseline = `export GIT_INDEX_FILE="$(git rev-parse --git-path paddock-bench-index)"
git -c core.hooksPath=/dev/null -c core.fsmonitor=false add -A && git write-tree >/dev/null`

// cpBench is the one sandbox the time machine's benchmarks share.
type cpBench struct {
	h    *clitest.Home
	repo string // the host repository, empty but for its first commit
	base string // the workspace's commit
	// named are the rewind's two checkpoints' commits, by name, made by its first run.
	named map[string]string
}

// run is paddock that fails the benchmark on a non-zero exit.
func (cb *cpBench) run(b *testing.B, args ...string) string {
	b.Helper()
	out, errOut, code := cb.h.Run("", args...)
	if code != 0 {
		b.Fatalf("paddock %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// sh runs a shell script in the workspace through the guest (paddock exec).
func (cb *cpBench) sh(b *testing.B, script string) string {
	b.Helper()
	return strings.TrimSpace(cb.run(b, "exec", cpBenchSandbox, "--", "sh", "-c", script))
}

// timed is how long fn took.
func timed(fn func()) time.Duration {
	start := time.Now()
	fn()
	return time.Since(start)
}

// checkpoints is the sandbox's checkpoints, the oldest first.
func (cb *cpBench) checkpoints(b *testing.B) []wire.Checkpoint {
	b.Helper()
	var all []wire.Checkpoint
	if err := json.Unmarshal([]byte(cb.run(b, "checkpoints", cpBenchSandbox, "--json")), &all); err != nil {
		b.Fatal(err)
	}
	return all
}

// BenchmarkCheckpoint is the time machine on one bwrap sandbox whose workspace is 500 MB
// in 20,000 files (made once for all its parts, a minute or two), with a shell session:
//   - take: a checkpoint after a turn changed 1 MB, against `git add -A && git write-tree`
//     of the same kind of change with an index of its own, through the same guest exec;
//   - storage: what 100 such checkpoints add to the sandbox's repository, against the
//     bytes they changed;
//   - rewind: files and conversation back by 1 MB, against `git restore` of the same;
//   - fork, fork-8, fork-docker: a new sandbox from a checkpoint to its first exec; 8 at
//     once against one; on docker.
func BenchmarkCheckpoint(b *testing.B) {
	testenv.Program(b, "bwrap", "apt-get install bubblewrap")
	h, repo := e2eHome(b)
	cb := &cpBench{h: h, repo: repo}
	cb.run(b, "up", repo, "--name", cpBenchSandbox)
	cb.run(b, "chat", cpBenchSandbox, "--new", cpBenchSession, "--agent", "shell", "--command", "sleep 100000")
	made := timed(func() { cb.base = cb.sh(b, cpBenchGenerate) })
	b.Logf("the 500 MB workspace written and committed in %v", made.Round(time.Millisecond))
	// The first checkpoint of the sandbox: its index starts empty, so it reads every file.
	warm := timed(func() { cb.sh(b, cpBenchBaseline) })
	cb.sh(b, cpBenchUntracked)
	first := timed(func() { cb.run(b, "checkpoint", cpBenchSandbox) })
	b.Logf("the first checkpoint of the 500 MB workspace: %v; the baseline's first add -A, its index empty: %v",
		first.Round(time.Millisecond), warm.Round(time.Millisecond))

	b.Run("take", cb.take)
	b.Run("storage", cb.storage)
	b.Run("rewind", cb.rewind)
	b.Run("fork", func(b *testing.B) { cb.fork(b, "bwrap", 1) })
	b.Run("fork-8", func(b *testing.B) {
		// Nine copies of the workspace and its repository (1 GB each) at once.
		var st syscall.Statfs_t
		if err := syscall.Statfs(h.Dir, &st); err == nil && int64(st.Bavail)*st.Bsize < 20<<30 {
			b.Skipf("8 forks of the 500 MB workspace need about 9 GB on %s's disk, and leave it 10 GB; it has %d MB free", h.Dir, int64(st.Bavail)*st.Bsize>>20)
		}
		cb.fork(b, "bwrap", 8)
	})
	b.Run("fork-docker", func(b *testing.B) {
		if !dockerReady() {
			testenv.Missing(b, "no docker engine with the paddock/sandbox image", "make setup")
		}
		cb.fork(b, "docker", 1)
	})
}

// take: each iteration changes the 1 MB and takes a checkpoint, changes it again and
// runs the baseline, and again for the baseline with untracked cache and split index,
// turning which goes first.
func (cb *cpBench) take(b *testing.B) {
	var ours, base, split []time.Duration
	for i := 0; i < b.N; i++ {
		for k := range 3 {
			cb.sh(b, cpBenchChange)
			switch (i + k) % 3 {
			case 0:
				ours = append(ours, timed(func() { cb.run(b, "checkpoint", cpBenchSandbox) }))
			case 1:
				base = append(base, timed(func() { cb.sh(b, cpBenchBaseline) }))
			default:
				split = append(split, timed(func() { cb.sh(b, cpBenchUntracked) }))
			}
		}
	}
	last := cb.checkpoints(b)
	if cp := last[len(last)-1]; cp.Files != cpBenchChanged {
		b.Errorf("the last checkpoint changed %d files, not %d: %+v", cp.Files, cpBenchChanged, cp)
	}
	// Where a checkpoint's time goes: the steps of its script, one by one, on the same
	// change, and a round trip of exec alone.
	cb.sh(b, cpBenchChange)
	steps := cb.sh(b, "set -- "+last[len(last)-1].Tree+"\n"+cpBenchSteps)
	rt := timed(func() { cb.sh(b, "true") })
	b.Logf("a checkpoint's steps, in ms: %s; exec true: %v", strings.ReplaceAll(steps, "\n", ", "), rt.Round(time.Millisecond))
	o, g := median(ours), median(base)
	b.ReportMetric(float64(o.Microseconds())/1000, "ms/checkpoint")
	b.ReportMetric(float64(g.Microseconds())/1000, "baseline-ms/add-write-tree")
	b.ReportMetric(float64(o)/float64(g), "x-baseline")
	b.ReportMetric(float64(median(split).Microseconds())/1000, "split-index-ms/add-write-tree")
	b.ReportMetric(0, "ns/op")
}

// cpBenchSteps runs a checkpoint's steps as its script does (on the baseline's index),
// printing how long each took.
const cpBenchSteps = `export GIT_INDEX_FILE="$(git rev-parse --git-path paddock-bench-index)"
export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.com GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.com
ms() { echo $(( $(date +%s%N) / 1000000 )); }
t0=$(ms); git -c core.hooksPath=/dev/null -c core.fsmonitor=false add -A -- .
t1=$(ms); tree=$(git write-tree)
t2=$(ms); git diff-tree -r --no-renames --raw --numstat "$1" "$tree" >/tmp/bench-stat
t3=$(ms); awk -F'\t' '/^:/ { split($1, f, " "); print f[4] }' /tmp/bench-stat | git cat-file --batch-check='%(objectsize)' >/dev/null
t4=$(ms); c=$(git commit-tree "$tree" -m bench)
t5=$(ms); git update-ref refs/bench/steps "$c"
t6=$(ms)
echo "add -A $((t1 - t0))"; echo "write-tree $((t2 - t1))"; echo "diff-tree --numstat $((t3 - t2))"
echo "cat-file sizes $((t4 - t3))"; echo "commit-tree $((t5 - t4))"; echo "update-ref $((t6 - t5))"`

// cpBenchStored sums the on-disk size of every object the checkpoints reach that the
// workspace's commit does not: what the checkpoints added to the repository. ($1^{tree},
// not $1: a checkpoint's commit has no parent, so the objects of a commit left out are
// left out only when its tree is named.)
const cpBenchStored = `git for-each-ref --format='%(objectname)' refs/paddock/checkpoints/ |
git rev-list --objects --stdin --not "$1^{tree}" | cut -d' ' -f1 |
git cat-file --batch-check='%(objectsize:disk)' | awk '{s += $1} END {print s + 0}'`

// storage: the checkpoints topped up to 100, each after 1 MB changed; what they added to
// the repository against the bytes they changed (the first checkpoint changed none).
func (cb *cpBench) storage(b *testing.B) {
	const want = 100
	have := cb.checkpoints(b)
	for range want - len(have) {
		cb.sh(b, cpBenchChange)
		cb.run(b, "checkpoint", cpBenchSandbox)
	}
	all := cb.checkpoints(b)
	changed := int64(len(all)-1) * cpBenchChanged * cpBenchSize
	var stored int64
	for i := 0; i < b.N; i++ {
		n, err := strconv.ParseInt(cb.sh(b, "set -- "+cb.base+"\n"+cpBenchStored), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		stored = n
	}
	var reported int64
	for _, cp := range all {
		reported += cp.Bytes
	}
	b.ReportMetric(float64(len(all)), "checkpoints")
	b.ReportMetric(float64(changed)/1e6, "changed-MB")
	b.ReportMetric(float64(stored)/1e6, "stored-MB")
	b.ReportMetric(float64(reported)/1e6, "reported-MB")
	b.ReportMetric(float64(stored)/float64(changed), "x-changed")
	b.ReportMetric(0, "ns/op")
}

// rewind: two named checkpoints 1 MB apart; each iteration rewinds the session to one
// and then the other, and restores the same two with `git restore` through the guest.
func (cb *cpBench) rewind(b *testing.B) {
	if cb.named == nil {
		cb.named = map[string]string{}
		for _, name := range []string{"rw-a", "rw-b"} {
			cb.sh(b, cpBenchChange)
			cb.run(b, "checkpoint", cpBenchSandbox, "--name", name)
			all := cb.checkpoints(b)
			cb.named[name] = all[len(all)-1].Commit
		}
	}
	commits := cb.named
	target := cpBenchSandbox + "/" + cpBenchSession
	var ours, base []time.Duration
	for i := 0; i < b.N; i++ {
		for _, name := range []string{"rw-a", "rw-b"} {
			ours = append(ours, timed(func() { cb.run(b, "rewind", target, "--to", name) }))
		}
		for _, name := range []string{"rw-a", "rw-b"} {
			base = append(base, timed(func() {
				cb.sh(b, "git -c core.hooksPath=/dev/null -c core.fsmonitor=false restore --source="+commits[name]+" --worktree -- .")
			}))
		}
	}
	// The workspace is at rw-b's files, which the session's sandbox shows.
	if got := cb.sh(b, "git -c core.fsmonitor=false diff --quiet "+commits["rw-b"]+" -- . && echo same"); got != "same" {
		b.Errorf("after the rewinds, the workspace is not at rw-b's files")
	}
	o, g := median(ours), median(base)
	b.ReportMetric(float64(o.Microseconds())/1000, "ms/rewind")
	b.ReportMetric(float64(g.Microseconds())/1000, "baseline-ms/restore")
	b.ReportMetric(float64(o)/float64(g), "x-baseline")
	b.ReportMetric(0, "ns/op")
}

// fork: k new sandboxes (on backend) from the session's newest checkpoint, to a first
// exec in each, removed after; against `up` of the empty repository to a first exec (a
// new sandbox with nothing to copy) and, with k > 1, one fork, in the same iteration.
func (cb *cpBench) fork(b *testing.B, backend string, k int) {
	from := cpBenchSandbox + "/" + cpBenchSession
	forkTo := func(name string, count int) time.Duration {
		args := []string{"fork", from, name, "--backend", backend}
		if count > 1 {
			args = append(args, "--count", strconv.Itoa(count))
		}
		names := []string{name}
		if count > 1 {
			names = names[:0]
			for j := 1; j <= count; j++ {
				names = append(names, fmt.Sprintf("%s-%d", name, j))
			}
		}
		var said string
		took := timed(func() {
			out, errOut, code := cb.h.Run("", args...)
			if code != 0 {
				b.Fatalf("paddock %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
			}
			said = errOut
			var wg sync.WaitGroup
			for _, n := range names {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if out, errOut, code := cb.h.Run("", "exec", n, "--", "test", "-s", "d199/f19999.bin"); code != 0 {
						b.Errorf("the fork %s has not the workspace: exit %d %s%s", n, code, out, errOut)
					}
				}()
			}
			wg.Wait()
		})
		// What the fork said it did, and when (its progress lines).
		b.Logf("%s in %v:\n%s", strings.Join(args, " "), took.Round(time.Millisecond), strings.TrimSpace(said))
		for _, n := range names {
			cb.run(b, "rm", n, "--force", "--purge")
		}
		return took
	}
	var one, many, up []time.Duration
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("u%d", i)
		up = append(up, timed(func() {
			cb.run(b, "up", cb.repo, "--name", name, "--backend", backend)
			cb.run(b, "exec", name, "--", "true")
		}))
		cb.run(b, "rm", name, "--force", "--purge")
		one = append(one, forkTo(fmt.Sprintf("f%d", i), 1))
		if k > 1 {
			many = append(many, forkTo(fmt.Sprintf("k%d", i), k))
		}
	}
	o, u := median(one), median(up)
	b.ReportMetric(float64(o.Microseconds())/1000, "ms/fork")
	b.ReportMetric(float64(u.Microseconds())/1000, "baseline-ms/up")
	b.ReportMetric(float64(o)/float64(u), "x-up")
	if k > 1 {
		m := median(many)
		b.ReportMetric(float64(m.Microseconds())/1000, fmt.Sprintf("ms/%d-forks", k))
		b.ReportMetric(float64(m)/float64(o), "x-one")
	}
	b.ReportMetric(0, "ns/op")
}
