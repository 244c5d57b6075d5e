// Command testrun runs one or more `go test -json` commands side by side (make test runs
// the heavy packages beside the rest this way) and reads their event streams as one: it
// prints what plain `go test` prints (a line per package, and the output of every test
// that failed), writes every test's duration to a report file, and prints the slowest
// tests at the end. Its exit status is the first non-zero one of its commands, so a
// failing `go test` fails it.
//
//	go run ./scripts/testrun [-report FILE] [-slowest N] CMD ARGS... [--- CMD ARGS...]...
//
// Each CMD writes test2json events on its standard output (go test -json, or anything
// that runs it); its standard error passes through. Without a command, testrun reads
// one event stream on its standard input.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail events name the package this way
	Test       string
	Elapsed    float64
	Output     string
}

// result is one finished test, or one finished package (Test empty).
type result struct {
	Package, Test, Action string
	Elapsed               float64
}

// reader folds the events of every stream into what a person reads and the report.
type reader struct {
	out     io.Writer
	pending map[string][]string // output so far of each running test and package
	failed  map[string][]string // output of each package's failed tests, until its end
	results []result
}

func newReader(out io.Writer) *reader {
	return &reader{out: out, pending: map[string][]string{}, failed: map[string][]string{}}
}

// line is one line of a command's output; from tells the commands that test one package
// apart (the tests it picks: "-run ^TestScripts$"), empty for most.
type line struct{ from, text string }

// line takes one line of a stream: an event, or text that is not one (printed as it is).
func (r *reader) line(l line) {
	var e event
	if !strings.HasPrefix(l.text, "{") || json.Unmarshal([]byte(l.text), &e) != nil {
		fmt.Fprintln(r.out, l.text)
		return
	}
	if e.Action == "build-output" {
		fmt.Fprint(r.out, e.Output)
		return
	}
	if l.from != "" {
		e.Package += " (" + l.from + ")"
	}
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "output":
		r.pending[key] = append(r.pending[key], e.Output)
	case "pass", "fail", "skip":
		out := r.pending[key]
		delete(r.pending, key)
		r.results = append(r.results, result{e.Package, e.Test, e.Action, e.Elapsed})
		r.finish(e, out)
	}
}

// finish prints what go test prints at the end of a package: the output of its tests
// that failed (kept until then, so that it stands beside the package's line, as go test
// prints it), then its summary line, or all its own output when it failed.
func (r *reader) finish(e event, out []string) {
	if e.Test != "" {
		if e.Action == "fail" {
			for _, l := range out {
				if !progress(l) {
					r.failed[e.Package] = append(r.failed[e.Package], l)
				}
			}
		}
		return
	}
	for _, l := range r.failed[e.Package] {
		fmt.Fprint(r.out, l)
	}
	delete(r.failed, e.Package)
	for _, l := range out {
		if e.Action == "fail" && !progress(l) || strings.HasPrefix(l, "ok  ") || strings.HasPrefix(l, "?   ") {
			fmt.Fprint(r.out, l)
		}
	}
}

// progress says whether l is one of go test -v's progress lines, which plain go test
// does not print.
func progress(l string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// report writes every result, slowest first (packages, then tests), to w.
func (r *reader) report(w io.Writer, wall time.Duration) {
	fmt.Fprintf(w, "# go test durations, slowest first (seconds; %s wall)\n", wall.Round(time.Second))
	fmt.Fprintf(w, "# packages\n")
	for _, res := range r.sorted(func(res result) bool { return res.Test == "" }) {
		fmt.Fprintf(w, "%8.2f  %-4s  %s\n", res.Elapsed, res.Action, res.Package)
	}
	fmt.Fprintf(w, "# tests\n")
	for _, res := range r.sorted(func(res result) bool { return res.Test != "" }) {
		fmt.Fprintf(w, "%8.2f  %-4s  %s %s\n", res.Elapsed, res.Action, res.Package, res.Test)
	}
}

// slowest prints the n slowest top-level tests (a subtest's time is in its parent's).
func (r *reader) slowest(w io.Writer, n int) {
	tests := r.sorted(func(res result) bool { return res.Test != "" && !strings.Contains(res.Test, "/") })
	if len(tests) > n {
		tests = tests[:n]
	}
	fmt.Fprintf(w, "slowest %d tests:\n", len(tests))
	for _, res := range tests {
		fmt.Fprintf(w, "%8.2fs  %s %s\n", res.Elapsed, strings.TrimPrefix(res.Package, module), res.Test)
	}
}

// module is left off the package paths of the short list.
const module = "github.com/paddockhq/paddock/"

func (r *reader) sorted(keep func(result) bool) []result {
	var out []result
	for _, res := range r.results {
		if keep(res) {
			out = append(out, res)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Elapsed > out[j].Elapsed })
	return out
}

// counts says how many tests passed, failed and skipped, and how many packages failed.
func (r *reader) counts() (pass, fail, skip, failedPkgs int) {
	for _, res := range r.results {
		if res.Test == "" {
			if res.Action == "fail" {
				failedPkgs++
			}
			continue
		}
		switch res.Action {
		case "pass":
			pass++
		case "fail":
			fail++
		case "skip":
			skip++
		}
	}
	return
}

// commands splits args at "---" into command lines.
func commands(args []string) [][]string {
	var cmds [][]string
	start := 0
	for i := 0; i <= len(args); i++ {
		if i == len(args) || args[i] == "---" {
			if i > start {
				cmds = append(cmds, args[start:i])
			}
			start = i + 1
		}
	}
	return cmds
}

// run starts every command, feeds their lines to lines, and returns the first non-zero
// exit status (1 for a command that did not start or was killed).
func run(cmds [][]string, lines chan<- line) int {
	var wg sync.WaitGroup
	codes := make([]int, len(cmds))
	for i, argv := range cmds {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stderr = nil, os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "testrun: %s: %v\n", strings.Join(argv, " "), err)
			codes[i] = 1
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			scan(stdout, picks(argv), lines)
			codes[i] = exitCode(cmd.Wait())
		}()
	}
	wg.Wait()
	for _, c := range codes {
		if c != 0 {
			return c
		}
	}
	return 0
}

func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	default:
		return 1
	}
}

// picks returns the flags of argv that pick tests (-run, -skip and their patterns).
func picks(argv []string) string {
	var out []string
	for i, a := range argv {
		if (a == "-run" || a == "-skip") && i+1 < len(argv) {
			out = append(out, a+" "+argv[i+1])
		} else if strings.HasPrefix(a, "-run=") || strings.HasPrefix(a, "-skip=") {
			out = append(out, a)
		}
	}
	return strings.Join(out, " ")
}

// scan sends each line of r to lines, marked from; a line may be long (a test's whole
// output line).
func scan(r io.Reader, from string, lines chan<- line) {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for s.Scan() {
		lines <- line{from, s.Text()}
	}
}

func main() {
	reportFile := flag.String("report", "test-durations.txt", "write every test's duration to `file` (empty: none)")
	n := flag.Int("slowest", 20, "print the `n` slowest tests at the end")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: testrun [-report FILE] [-slowest N] [CMD ARGS... [--- CMD ARGS...]...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	os.Exit(mainStatus(*reportFile, *n, commands(flag.Args())))
}

func mainStatus(reportFile string, n int, cmds [][]string) int {
	start := time.Now()
	r := newReader(os.Stdout)
	lines := make(chan line, 256)
	done := make(chan struct{})
	go func() {
		for l := range lines {
			r.line(l)
		}
		close(done)
	}()
	code := 0
	if len(cmds) == 0 {
		scan(os.Stdin, "", lines)
	} else {
		code = run(cmds, lines)
	}
	close(lines)
	<-done
	for pkg, out := range r.failed { // a package that never ended (its process killed)
		fmt.Printf("%s (no end seen):\n%s", pkg, strings.Join(out, ""))
	}
	wall := time.Since(start)
	if reportFile != "" {
		if err := writeReport(r, reportFile, wall); err != nil {
			fmt.Fprintf(os.Stderr, "testrun: %v\n", err)
		}
	}
	fmt.Println()
	r.slowest(os.Stdout, n)
	pass, fail, skip, failedPkgs := r.counts()
	fmt.Printf("%d passed, %d failed, %d skipped in %s", pass, fail, skip, wall.Round(time.Second))
	if failedPkgs > 0 {
		fmt.Printf(" (%d packages FAILED)", failedPkgs)
	}
	if reportFile != "" {
		fmt.Printf("; every duration in %s", reportFile)
	}
	fmt.Println()
	if code == 0 && fail > 0 {
		code = 1
	}
	return code
}

func writeReport(r *reader, file string, wall time.Duration) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	r.report(w, wall)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
