package conform_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/backend/conform"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestRunReportsEachCheck: the runner outside tests gives one result per check: a Fatalf
// ends its check there and fails it, an Errorf in one of its parts fails it with the
// part's name, a Skip is NOT APPLICABLE with why, a panic fails it, and cleanups run.
func TestRunReportsEachCheck(t *testing.T) {
	var cleaned, after []string
	var progress []string
	results, err := conform.RunFunc(context.Background(), func(t conform.T) {
		t.Run("Holds", func(t conform.T) { t.Cleanup(func() { cleaned = append(cleaned, "Holds") }) })
		t.Run("Escapes", func(t conform.T) {
			t.Cleanup(func() { cleaned = append(cleaned, "Escapes") })
			t.Fatalf("read the host's secret")
			after = append(after, "Escapes")
		})
		t.Run("Parts", func(t conform.T) {
			t.Run("fine", func(t conform.T) {})
			t.Run("broken", func(t conform.T) { t.Errorf("wrote outside") })
		})
		t.Run("Machine", func(t conform.T) { t.Skip("the sandbox is a machine of its own") })
		t.Run("Panics", func(t conform.T) { panic("boom") })
	}, func(r conform.Result) { progress = append(progress, r.Name) })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]conform.Status{"Holds": conform.Pass, "Escapes": conform.Fail, "Parts": conform.Fail,
		"Machine": conform.NotApplicable, "Panics": conform.Fail}
	if len(results) != len(want) {
		t.Fatalf("results = %+v, want %d", results, len(want))
	}
	for _, r := range results {
		if r.Status != want[r.Name] {
			t.Errorf("%s: %s (%s), want %s", r.Name, r.Status, r.Why, want[r.Name])
		}
	}
	why := map[string]string{}
	for _, r := range results {
		why[r.Name] = r.Why
	}
	if why["Escapes"] != "read the host's secret" || why["Parts"] != "broken: wrote outside" ||
		why["Machine"] != "the sandbox is a machine of its own" || !strings.Contains(why["Panics"], "boom") {
		t.Errorf("why = %q", why)
	}
	if len(after) > 0 {
		t.Errorf("Fatalf did not end the check")
	}
	if !slices.Equal(cleaned, []string{"Holds", "Escapes"}) {
		t.Errorf("cleanups ran for %v", cleaned)
	}
	if !slices.Equal(progress, []string{"Holds", "Escapes", "Parts", "Machine", "Panics"}) {
		t.Errorf("progress told of %v", progress)
	}
}

// TestRunInterrupted: when the context ends first, the cleanups registered so far run
// (what verify relies on to leave nothing behind on Ctrl-C).
func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cleaned := make(chan struct{})
	block := make(chan struct{})
	defer close(block)
	_, err := conform.RunFunc(ctx, func(t conform.T) {
		t.Cleanup(func() { close(cleaned) })
		t.Run("Hangs", func(t conform.T) { cancel(); <-block })
	}, nil)
	if err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	select {
	case <-cleaned:
	default:
		t.Fatal("the cleanup did not run")
	}
}

// TestNoTesting: the checks link into paddock's binary, which must not link the testing
// package. It reads another package's dependencies, which Go's test cache does not see:
// gated on go through testenv, the package runs uncached in make test.
func TestNoTesting(t *testing.T) {
	goTool := testenv.Program(t, "go", "https://go.dev/dl")
	out, err := exec.Command(goTool, "list", "-deps", "../../../cmd/paddock-full").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/paddockhq/paddock/internal/backend/conform") {
		t.Fatalf("paddock-full does not link the checks: this guard guards nothing")
	}
	for _, d := range deps {
		if d == "testing" || strings.HasSuffix(d, "/backendtest") || strings.HasSuffix(d, "/testenv") {
			t.Errorf("paddock-full links %s", d)
		}
	}
}
