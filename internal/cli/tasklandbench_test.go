package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// BenchmarkTaskLand: landing one attempt (`task land NAME --attempt 1`: rebased onto the
// host's main in its sandbox, the check run there again, main fast-forwarded) from the
// command until the queue's entry is landed, against the same by hand with git on the
// host for the task's other attempt: `paddock sync` of its sandbox, a branch at what
// arrived, `git rebase main`, the check, `git merge --ff-only` into main. Before each,
// main gets a commit of its own, so that the rebase has work. The check takes 300 ms of
// its own; x-excl-checks leaves the by-hand check's measured time out of both.
func BenchmarkTaskLand(b *testing.B) {
	tb := newTaskBench(b)
	var task, hand, checks []time.Duration
	advance := func(what string) {
		os.WriteFile(filepath.Join(tb.repo, "main-"+what+".txt"), []byte(what+"\n"), 0o644)
		tb.git("add", "-A")
		tb.git("commit", "-qm", "main moves: "+what)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("land%d", i)
		tb.newTask(name, taskBenchWork(0), 2, "--check", taskBenchCheck)
		tb.until(5*time.Minute, name+" done", func() bool { return tb.show(name).State == wire.TaskDone })
		advance(name + "-a")
		b.StartTimer()

		// The task's landing of attempt 1, to the queue's record of it landed.
		start := time.Now()
		tb.h.Must("task", "land", name, "--attempt", "1")
		var landed wire.QueueEntry
		tb.until(5*time.Minute, name+"/1 landed", func() bool {
			var q []wire.QueueEntry
			if err := json.Unmarshal([]byte(tb.h.Must("task", "queue", name, "--json")), &q); err != nil {
				b.Fatal(err)
			}
			for _, e := range q {
				if e.Attempt == 1 {
					if e.State == wire.QueueFailed || e.State == wire.QueueConflict {
						b.Fatalf("%s/1: %s: %s", name, e.State, e.Detail)
					}
					landed = e
				}
			}
			return landed.State == wire.QueueLanded
		})
		task = append(task, landed.Updated.Sub(start))
		if tip := tb.git("rev-parse", "main"); tip != landed.Commit {
			b.Fatalf("main is at %s after landing %s", tip, landed.Commit)
		}
		b.StopTimer()
		tb.logEvents(name+"-1", start)
		b.Logf("%s/1: queued +%v, landed +%v", name, landed.Created.Sub(start).Round(time.Millisecond), landed.Updated.Sub(start).Round(time.Millisecond))

		// The same by hand for attempt 2.
		advance(name + "-b")
		b.StartTimer()
		start = time.Now()
		var steps []string
		step := func(what string, do func()) {
			s := time.Now()
			do()
			steps = append(steps, fmt.Sprintf("%s %v", what, time.Since(s).Round(time.Millisecond)))
		}
		sb, branch := name+"-2", "task/"+name+"/2"
		step("sync", func() { tb.h.Must("sync", sb) })
		step("checkout", func() { tb.git("checkout", "-q", "-b", "land-"+name, "refs/paddock/"+sb+"/"+branch) })
		step("rebase", func() { tb.git("rebase", "-q", "main") })
		cs := time.Now()
		step("check", func() {
			if out, err := exec.Command("sh", "-c", "cd \"$1\" && "+taskBenchCheck, "sh", tb.repo).CombinedOutput(); err != nil {
				b.Fatalf("the check by hand: %v %s", err, out)
			}
		})
		checks = append(checks, time.Since(cs))
		step("ff", func() {
			tb.git("checkout", "-q", "main")
			tb.git("merge", "-q", "--ff-only", "land-"+name)
		})
		hand = append(hand, time.Since(start))
		b.StopTimer()
		b.Logf("%s/2 by hand: %s", name, strings.Join(steps, ", "))
		tb.git("branch", "-q", "-D", "land-"+name)
		tb.h.Must("task", "rm", name)
		b.StartTimer()
	}
	b.StopTimer()
	t, h, c := median(task), median(hand), median(checks)
	b.ReportMetric(float64(t.Milliseconds()), "land-ms")
	b.ReportMetric(float64(h.Milliseconds()), "by-hand-ms")
	b.ReportMetric(float64(c.Milliseconds()), "check-ms")
	b.ReportMetric(float64(t)/float64(h), "x-by-hand")
	b.ReportMetric(float64(t-c)/float64(h-c), "x-excl-checks")
}
