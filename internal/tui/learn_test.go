package tui

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// TestAllowlistProposal: L on a sandbox that never learned asks to start learning; once
// it has, L shows the proposed allowlist as a diff, and a applies it, as the CLI does.
func TestAllowlistProposal(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running", wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "idle"})
	count := filepath.Join(t.TempDir(), "count")
	cmds := &commandLog{scripts: map[string]string{
		"net": `n=$(($(cat ` + count + ` 2>/dev/null || echo 0) + 1)); echo $n > ` + count + `
case $n in
1) echo "paddock: sandbox api has not been in learn mode (run ...)" >&2; exit 4;;
2) echo "paddock: sandbox api is learning until 2026-01-01T10:00:00Z" >&2;;
3) echo "sandbox api, learning from 2026-01-01T09:00:00Z until 2026-01-01T10:00:00Z: 4 requests to 2 destinations" >&2
   echo "  allow  github.com   default  3 allowed: github.com:443"
   echo "+ allow  example.org  api      1 refused: example.org:443"
   echo "apply with: paddock net propose api --apply" >&2;;
*) echo "paddock: applied to sandbox api: 1 rules added, 0 removed" >&2;;
esac`,
	}}
	u := startTUI(t, f, cmds, 200, 16)
	u.waitFor("fix-auth")
	u.press("down", "L")
	u.waitFor("api has not learned its allowlist")
	u.press("y")
	u.waitFor("is learning until 2026-01-01T10:00:00Z")
	u.press("q", "L")
	u.waitFor("+ allow  example.org  api      1 refused: example.org:443")
	u.waitFor("a apply")
	u.press("a")
	u.waitFor("applied to sandbox api: 1 rules added")
	want := []string{"net propose api", "net learn api", "net propose api", "net propose api --apply"}
	if got := cmds.log(); !slices.Equal(got, want) {
		t.Fatalf("commands run: %q, want %q", got, want)
	}
}
