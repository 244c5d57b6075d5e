package tui

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// TestMergeAsksFirst: M plans the merge (`paddock merge --check`, which holds the policy),
// asks with the files that run code on the host named, and merges only on a yes.
func TestMergeAsksFirst(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running", wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "idle"})
	count := filepath.Join(t.TempDir(), "count")
	plan := `{"branch":"main","ref":"refs/paddock/api/main","commit":"c0ffee","into":"trunk","commits":["abc add x"],"files":["A\tx","M\tMakefile"],` +
		`"fast_forward":true,"runs_on_host":[{"ref":"refs/paddock/api/main","path":"Makefile","why":"make runs its recipes"}],"uncommitted":true}`
	cmds := &commandLog{scripts: map[string]string{
		"merge": `n=$(($(cat ` + count + ` 2>/dev/null || echo 0) + 1)); echo $n > ` + count + `
if [ $n -ge 3 ]; then echo "paddock: merged api's main into trunk (fast-forward from 0123)" >&2; else printf '%s\n' '` + plan + `'; fi`,
	}}
	u := startTUI(t, f, cmds, 200, 16)
	u.waitFor("fix-auth")
	u.press("down", "M")
	u.waitFor("Merge api's main into trunk (fast-forward, 1 commit(s), 2 file(s))?")
	u.waitFor("Makefile (make runs its recipes)")
	u.press("n")
	u.waitFor("cancelled")
	if got := cmds.log(); !slices.Equal(got, []string{"merge api --check --json"}) {
		t.Fatalf("commands run before a yes: %q", got)
	}
	u.press("M")
	u.waitFor("Merge api's main into trunk")
	u.press("y")
	u.waitFor("merged api's main into trunk (fast-forward from 0123)")
	if got := cmds.log(); !slices.Equal(got, []string{"merge api --check --json", "merge api --check --json", "merge --commit c0ffee --yes -- api main"}) {
		t.Fatalf("commands run: %q", got)
	}
}
