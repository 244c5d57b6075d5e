package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/modeltest"
)

// BenchmarkRunTools measures a tool call of the host-side agent, as the daemon records
// its duration in a run (the call through the guest connection, no process start for
// read_file), against the same operation through `paddock exec` in the same run: a read
// of a 10 KB file (cat) and `true`.
func BenchmarkRunTools(b *testing.B) {
	paddock, _ := runBenchHome(b)
	must := func(args ...string) string {
		out, errOut, code := paddock("", args...)
		if code != 0 {
			b.Fatalf("paddock %v: exit %d %s", args, code, errOut)
		}
		return out
	}
	var prompt strings.Builder
	for range b.N {
		prompt.WriteString(planned("read_file", map[string]any{"path": "ten.txt"}))
		prompt.WriteString(planned("run_command", map[string]any{"command": "true"}))
	}
	b.ResetTimer()
	must("run", "repo", prompt.String())
	var execCat, execTrue time.Duration
	for range b.N {
		start := time.Now()
		must("exec", "repo", "--", "cat", "ten.txt")
		execCat += time.Since(start)
		start = time.Now()
		must("exec", "repo", "--", "true")
		execTrue += time.Since(start)
	}
	b.StopTimer()
	var list []struct{ ID string }
	json.Unmarshal([]byte(must("runs", "--json")), &list)
	var r struct {
		Steps []struct {
			Kind, Name string
			Duration   time.Duration `json:"duration_ns"`
		}
	}
	json.Unmarshal([]byte(must("run", "show", list[0].ID, "--json")), &r)
	var read, run time.Duration
	for _, st := range r.Steps {
		switch {
		case st.Kind == "tool" && st.Name == "read_file":
			read += st.Duration
		case st.Kind == "tool" && st.Name == "run_command":
			run += st.Duration
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(read.Nanoseconds())/n, "read_file-ns")
	b.ReportMetric(float64(execCat.Nanoseconds())/n, "exec-cat-ns")
	b.ReportMetric(float64(execCat)/float64(read), "read-x-faster")
	b.ReportMetric(float64(run.Nanoseconds())/n, "run_command-ns")
	b.ReportMetric(float64(execTrue.Nanoseconds())/n, "exec-true-ns")
	b.ReportMetric(float64(execTrue)/float64(run), "run-x-faster")
}

// BenchmarkRunOverhead runs a 20-tool-call scripted run end to end whose model answers
// each turn after 50 ms, and reports paddock's own share of the wall time: all but the
// model turns as the run records them (request, the model's 50 ms, the streamed answer).
func BenchmarkRunOverhead(b *testing.B) {
	paddock, srv := runBenchHome(b)
	srv.SetDelay(50 * time.Millisecond)
	var prompt strings.Builder
	for i := range 20 {
		if i%2 == 0 {
			prompt.WriteString(planned("read_file", map[string]any{"path": "ten.txt"}))
		} else {
			prompt.WriteString(planned("run_command", map[string]any{"command": "wc -c ten.txt"}))
		}
	}
	var wall, model []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		out, errOut, code := paddock("", "run", "repo", prompt.String(), "--json")
		if code != 0 {
			b.Fatalf("run: exit %d %s", code, errOut)
		}
		wall = append(wall, time.Since(start))
		var m time.Duration
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var ev struct {
				Type     string
				Duration time.Duration `json:"duration_ns"`
			}
			json.Unmarshal([]byte(line), &ev)
			if ev.Type == "turn" {
				m += ev.Duration
			}
		}
		model = append(model, m)
	}
	b.StopTimer()
	med := func(d []time.Duration) time.Duration {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	w, m := med(wall), med(model)
	b.ReportMetric(float64(w.Milliseconds()), "wall-ms")
	b.ReportMetric(float64(m.Milliseconds()), "model-ms")
	b.ReportMetric(100*float64(w-m)/float64(w), "paddock-%")
}

// runBenchHome makes a home whose Anthropic provider is a scripted server, and a sandbox
// "repo" holding a 10 KB file ten.txt.
func runBenchHome(b *testing.B) (paddockRun, *modeltest.Anthropic) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	srv := modeltest.NewAnthropic(b)
	h, repo := e2eHome(b)
	h.Setenv("ANTHROPIC_BASE_URL", srv.URL())
	h.Setenv("ANTHROPIC_API_KEY", realRunKey)
	os.WriteFile(filepath.Join(repo, "ten.txt"), []byte(strings.Repeat("0123456789abcdef\n", 10240/17)), 0o644)
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "-m", "ten"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	paddock := newPaddock(h)
	if _, errOut, code := paddock("", "up", repo); code != 0 {
		b.Fatalf("up: %s", errOut)
	}
	return paddock, srv
}
