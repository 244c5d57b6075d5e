package main

import (
	"strings"
	"testing"
	"time"
)

// stream is two packages as go test -json tells them: one cached and passing, one with a
// failing subtest and a passing and a skipped test, and a package that did not build.
const stream = `{"Action":"start","Package":"example.com/a"}
{"Action":"output","Package":"example.com/a","Output":"ok  \texample.com/a\t(cached)\n"}
{"Action":"pass","Package":"example.com/a","Elapsed":0}
{"Action":"run","Package":"example.com/b","Test":"TestSlow"}
{"Action":"output","Package":"example.com/b","Test":"TestSlow","Output":"=== RUN   TestSlow\n"}
{"Action":"output","Package":"example.com/b","Test":"TestSlow","Output":"    b_test.go:9: quiet when it passes\n"}
{"Action":"pass","Package":"example.com/b","Test":"TestSlow","Elapsed":12.5}
{"Action":"output","Package":"example.com/b","Test":"TestBroken/case","Output":"=== RUN   TestBroken/case\n"}
{"Action":"output","Package":"example.com/b","Test":"TestBroken/case","Output":"    b_test.go:20: got 1, want 2\n"}
{"Action":"output","Package":"example.com/b","Test":"TestBroken/case","Output":"    --- FAIL: TestBroken/case (0.20s)\n"}
{"Action":"fail","Package":"example.com/b","Test":"TestBroken/case","Elapsed":0.2}
{"Action":"output","Package":"example.com/b","Test":"TestBroken","Output":"--- FAIL: TestBroken (0.30s)\n"}
{"Action":"fail","Package":"example.com/b","Test":"TestBroken","Elapsed":0.3}
{"Action":"output","Package":"example.com/b","Test":"TestSkipped","Output":"    b_test.go:30: no tool\n"}
{"Action":"skip","Package":"example.com/b","Test":"TestSkipped","Elapsed":0}
{"Action":"output","Package":"example.com/b","Output":"FAIL\n"}
{"Action":"output","Package":"example.com/b","Output":"FAIL\texample.com/b\t13.1s\n"}
{"Action":"fail","Package":"example.com/b","Elapsed":13.1}
{"ImportPath":"example.com/c","Action":"build-output","Output":"c/c.go:3:1: syntax error\n"}
not an event
`

func read(t *testing.T) (*reader, string) {
	t.Helper()
	var out strings.Builder
	r := newReader(&out)
	for _, l := range strings.Split(strings.TrimSuffix(stream, "\n"), "\n") {
		r.line(line{text: l})
	}
	return r, out.String()
}

// TestPrintsWhatGoTestPrints: the summary line of every package, the output of failed
// tests and packages, build errors and stray lines; nothing of passing or skipped tests.
func TestPrintsWhatGoTestPrints(t *testing.T) {
	_, got := read(t)
	want := "ok  \texample.com/a\t(cached)\n" +
		"    b_test.go:20: got 1, want 2\n    --- FAIL: TestBroken/case (0.20s)\n" +
		"--- FAIL: TestBroken (0.30s)\n" +
		"FAIL\nFAIL\texample.com/b\t13.1s\n" +
		"c/c.go:3:1: syntax error\n" +
		"not an event\n"
	if got != want {
		t.Errorf("printed:\n%s\nwant:\n%s", got, want)
	}
}

// TestReport: every test and package in the report, slowest first; the short list has
// top-level tests only; the counts are of tests.
func TestReport(t *testing.T) {
	r, _ := read(t)
	var rep strings.Builder
	r.report(&rep, 90*time.Second)
	lines := strings.Split(rep.String(), "\n")
	want := []string{
		"# go test durations, slowest first (seconds; 1m30s wall)",
		"# packages",
		"   13.10  fail  example.com/b",
		"    0.00  pass  example.com/a",
		"# tests",
		"   12.50  pass  example.com/b TestSlow",
		"    0.30  fail  example.com/b TestBroken",
		"    0.20  fail  example.com/b TestBroken/case",
		"    0.00  skip  example.com/b TestSkipped",
	}
	for i, w := range want {
		if i >= len(lines) || lines[i] != w {
			t.Fatalf("report:\n%s\nwant line %d: %q", rep.String(), i, w)
		}
	}
	var short strings.Builder
	r.slowest(&short, 2)
	if got, want := short.String(), "slowest 2 tests:\n   12.50s  example.com/b TestSlow\n    0.30s  example.com/b TestBroken\n"; got != want {
		t.Errorf("slowest:\n%s\nwant:\n%s", got, want)
	}
	if pass, fail, skip, pkgs := r.counts(); pass != 1 || fail != 2 || skip != 1 || pkgs != 1 {
		t.Errorf("counts %d passed, %d failed, %d skipped, %d packages failed; want 1, 2, 1, 1", pass, fail, skip, pkgs)
	}
}

// TestExitStatus: the first failing command's status is testrun's; every command's
// lines are read.
func TestExitStatus(t *testing.T) {
	cmds := commands([]string{"sh", "-c", "echo one; exit 0", "---", "sh", "-c", "echo two; exit 3", "---", "sh", "-c", "exit 0"})
	if len(cmds) != 3 {
		t.Fatalf("commands: %q", cmds)
	}
	lines := make(chan line, 10)
	if code := run(cmds, lines); code != 3 {
		t.Errorf("status %d, want 3", code)
	}
	close(lines)
	var got []string
	for l := range lines {
		got = append(got, l.text)
	}
	if strings.Join(got, ",") != "one,two" && strings.Join(got, ",") != "two,one" {
		t.Errorf("lines %q, want one and two", got)
	}
}

// TestPicks: two commands testing one package are told apart by the tests they pick.
func TestPicks(t *testing.T) {
	var out strings.Builder
	r := newReader(&out)
	for _, from := range []string{"-run ^TestScripts$", "-skip ^TestScripts$"} {
		r.line(line{from, `{"Action":"output","Package":"example.com/cli","Output":"FAIL\n"}`})
		r.line(line{from, `{"Action":"fail","Package":"example.com/cli","Elapsed":1}`})
	}
	if got := picks([]string{"go", "test", "-json", "-run", "^TestScripts$", "-count=1", "./x"}); got != "-run ^TestScripts$" {
		t.Errorf("picks = %q", got)
	}
	var rep strings.Builder
	r.report(&rep, time.Second)
	for _, want := range []string{"example.com/cli (-run ^TestScripts$)\n", "example.com/cli (-skip ^TestScripts$)\n"} {
		if !strings.Contains(rep.String(), want) {
			t.Errorf("report:\n%s\nwants %q", rep.String(), want)
		}
	}
	if out.String() != "FAIL\nFAIL\n" {
		t.Errorf("printed %q: each package's own output once", out.String())
	}
}

// TestFailuresBesideTheirPackage: a failed test's output is printed with its package's
// line, not among other packages' lines that ended in between.
func TestFailuresBesideTheirPackage(t *testing.T) {
	var out strings.Builder
	r := newReader(&out)
	for _, l := range []string{
		`{"Action":"output","Package":"example.com/a","Test":"TestA","Output":"    a_test.go:1: broken\n"}`,
		`{"Action":"fail","Package":"example.com/a","Test":"TestA","Elapsed":1}`,
		`{"Action":"output","Package":"example.com/b","Output":"ok  \texample.com/b\t0.1s\n"}`,
		`{"Action":"pass","Package":"example.com/b","Elapsed":0.1}`,
		`{"Action":"output","Package":"example.com/a","Output":"FAIL\texample.com/a\t2.0s\n"}`,
		`{"Action":"fail","Package":"example.com/a","Elapsed":2}`,
	} {
		r.line(line{text: l})
	}
	want := "ok  \texample.com/b\t0.1s\n    a_test.go:1: broken\nFAIL\texample.com/a\t2.0s\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
}
