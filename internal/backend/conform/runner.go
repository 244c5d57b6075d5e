package conform

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Status is how a check ended.
type Status string

// The statuses of a check.
const (
	// Pass: the check ran and found nothing wrong.
	Pass Status = "PASS"
	// Fail: the check found what must not be, or could not run to its end.
	Fail Status = "FAIL"
	// NotApplicable: the check does not apply to this backend; Why says why.
	NotApplicable Status = "NOT APPLICABLE"
)

// Result is one check's outcome, as the report shows it.
type Result struct {
	// Name is the check's name (Checks).
	Name string `json:"name"`
	// Status is PASS, FAIL or NOT APPLICABLE.
	Status Status `json:"status"`
	// Why is, for a failure, what was found, and for NOT APPLICABLE, why not.
	Why string `json:"why,omitempty"`
	// Notes are what the check logged: what it allowed and why, parts it skipped.
	Notes []string `json:"notes,omitempty"`
	// Seconds is how long it ran.
	Seconds float64 `json:"seconds"`
}

// Run runs the suite on h outside any test: each check in a goroutine of its own, which
// Fatal and Skip end (runtime.Goexit), as testing does. progress, when set, is told of each
// check as it ends. When ctx ends first, Run runs every cleanup registered so far (planted
// files, open connections, the shared sandbox's destroy) and returns what it has, with
// ctx's error; the checks still running are left to the process's end.
func Run(ctx context.Context, h Harness, progress func(Result)) ([]Result, error) {
	return RunFunc(ctx, func(t T) { Suite(t, h) }, progress)
}

// RunFunc is Run for any suite: each check suite runs with t.Run is a result.
func RunFunc(ctx context.Context, suite func(t T), progress func(Result)) ([]Result, error) {
	r := &runner{progress: progress}
	root := &runT{r: r}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		defer root.finish()
		suite(root)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		r.cleanupAll()
		return r.snapshot(), ctx.Err()
	}
	results := r.snapshot()
	// A failure outside any check (no sandbox could be started) is a result of its own.
	if len(root.fails) > 0 {
		res := Result{Name: "Sandbox", Status: Fail, Why: strings.Join(root.fails, "\n"), Seconds: time.Since(start).Seconds()}
		r.add(res)
		results = append(results, res)
	}
	return results, nil
}

// runner holds what every check of one run shares.
type runner struct {
	progress func(Result)
	mu       sync.Mutex
	results  []Result
	pending  []*cleanup
}

func (r *runner) add(res Result) {
	r.mu.Lock()
	r.results = append(r.results, res)
	r.mu.Unlock()
	if r.progress != nil {
		r.progress(res)
	}
}

func (r *runner) snapshot() []Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Result(nil), r.results...)
}

// cleanupAll runs every cleanup not yet run, last registered first.
func (r *runner) cleanupAll() {
	r.mu.Lock()
	pending := append([]*cleanup(nil), r.pending...)
	r.mu.Unlock()
	for i := len(pending) - 1; i >= 0; i-- {
		pending[i].run()
	}
}

// cleanup is a function that runs at most once, from its check or from cleanupAll.
type cleanup struct {
	once sync.Once
	f    func()
}

func (c *cleanup) run() { c.once.Do(func() { defer func() { recover() }(); c.f() }) }

// runT is a T of verify's runner. The root (depth 0) is the suite; depth 1 are the
// checks the report lists; deeper ones are their parts, whose findings go to their check.
type runT struct {
	r        *runner
	name     string // relative to the check, "" for the check itself
	parent   *runT
	depth    int
	mu       sync.Mutex
	failed   bool
	skipped  string
	fails    []string
	notes    []string
	cleanups []*cleanup
}

// check is the depth-1 ancestor that the report lists (the root for the root).
func (t *runT) check() *runT {
	for t.depth > 1 {
		t = t.parent
	}
	return t
}

func (t *runT) record(fail bool, msg string) {
	c := t.check()
	if t != c && t.name != "" {
		msg = t.name + ": " + msg
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if fail {
		c.fails = append(c.fails, msg)
	} else {
		c.notes = append(c.notes, msg)
	}
}

func (t *runT) markFailed() {
	for p := t; p != nil; p = p.parent {
		p.mu.Lock()
		p.failed = true
		p.mu.Unlock()
	}
}

func (t *runT) Name() string                    { return t.name }
func (t *runT) Helper()                         {}
func (t *runT) Logf(format string, args ...any) { t.record(false, fmt.Sprintf(format, args...)) }
func (t *runT) Error(args ...any)               { t.record(true, sprint(args)); t.markFailed() }
func (t *runT) Errorf(format string, args ...any) {
	t.record(true, fmt.Sprintf(format, args...))
	t.markFailed()
}
func (t *runT) Fatal(args ...any)                 { t.Error(args...); runtime.Goexit() }
func (t *runT) Fatalf(format string, args ...any) { t.Errorf(format, args...); runtime.Goexit() }
func (t *runT) Skip(args ...any)                  { t.skip(sprint(args)) }
func (t *runT) Skipf(format string, args ...any)  { t.skip(fmt.Sprintf(format, args...)) }

func (t *runT) skip(why string) {
	t.mu.Lock()
	t.skipped = why
	t.mu.Unlock()
	if t.depth > 1 {
		t.record(false, "not run: "+why)
	}
	runtime.Goexit()
}

func (t *runT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *runT) Cleanup(f func()) {
	c := &cleanup{f: f}
	t.mu.Lock()
	t.cleanups = append(t.cleanups, c)
	t.mu.Unlock()
	t.r.mu.Lock()
	t.r.pending = append(t.r.pending, c)
	t.r.mu.Unlock()
}

func (t *runT) Setenv(key, value string) {
	old, had := os.LookupEnv(key)
	os.Setenv(key, value)
	t.Cleanup(func() {
		if had {
			os.Setenv(key, old)
		} else {
			os.Unsetenv(key)
		}
	})
}

func (t *runT) Run(name string, f func(t T)) bool {
	child := &runT{r: t.r, parent: t, depth: t.depth + 1, name: name}
	if t.depth >= 2 {
		child.name = t.name + "/" + name
	}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer child.finish()
		f(child)
	}()
	<-done
	if child.depth == 1 {
		res := Result{Name: name, Status: Pass, Notes: child.notes, Seconds: time.Since(start).Seconds()}
		switch {
		case child.failed:
			res.Status, res.Why = Fail, strings.Join(child.fails, "\n")
		case child.skipped != "":
			res.Status, res.Why = NotApplicable, child.skipped
		}
		t.r.add(res)
	}
	return !child.Failed()
}

// finish ends a check: a panic is its failure, then its cleanups run, last first.
func (t *runT) finish() {
	if p := recover(); p != nil {
		t.record(true, fmt.Sprintf("panic: %v", p))
		t.markFailed()
	}
	t.mu.Lock()
	cs := t.cleanups
	t.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i].run()
	}
}

func sprint(args []any) string { return strings.TrimSuffix(fmt.Sprintln(args...), "\n") }
