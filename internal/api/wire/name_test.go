package wire

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/testenv"
)

func TestValidateName(t *testing.T) {
	for name, ok := range map[string]bool{
		"myrepo": true, "fix-auth_bug.2": true, "A1": true, "head-start": true, "forehead": true, "heads": true,
		"": false, "-x": false, ".x": false, "a..b": false, "a/b": false, "x.lock": false, "x.": false,
		"has space": false, "ünï": false, string(make([]byte, 64)): false,
		// git's check-ref-format refusals.
		"@": false, "a@{1}": false, "x.LOCK": false, "x.Lock": false, "a~1": false, "a^": false, "a:b": false,
		"a?": false, "a*": false, "a[b": false, `a\b`: false, "-delete": false,
		// git's own names, in any case (macOS filesystems ignore case).
		"HEAD": false, "head": false, "Head": false, "FETCH_HEAD": false, "fetch_head": false, "ORIG_HEAD": false,
		"MERGE_HEAD": false, "CHERRY_PICK_HEAD": false, "cherry_pick_head": false, "REVERT_HEAD": false,
		"REBASE_HEAD": false, "BISECT_HEAD": false, "AUTO_MERGE": false, "auto_merge": false,
		"my_head": false, "a_b_head": false, "my-head": true, "x_head2": true, "a1_head": true,
	} {
		if err := ValidateName(name); (err == nil) != ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

// TestValidNamesAreBranchComponents checks every accepted name against git itself: as
// the component of a ref paddock makes (refs/paddock/NAME/main) and as a branch.
func TestValidNamesAreBranchComponents(t *testing.T) {
	testenv.Program(t, "git", "apt-get install git")
	names := []string{"myrepo", "fix-auth_bug.2", "A1", "head-start", "forehead", "x.lock-not", "a.b-c_d", "HEADS", "my_heads"}
	for _, name := range names {
		if err := ValidateName(name); err != nil {
			t.Fatalf("ValidateName(%q) = %v", name, err)
		}
		for _, args := range [][]string{{"check-ref-format", "refs/paddock/" + name + "/main"}, {"check-ref-format", "--branch", name}} {
			if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
				t.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
			}
		}
	}
	// And git refuses what ValidateName refuses for that reason.
	for _, name := range []string{"x.lock", "a..b", "-x", "a@{1}", "HEAD"} {
		if exec.Command("git", "check-ref-format", "--branch", name).Run() == nil {
			t.Errorf("git accepts branch %q, which ValidateName refuses as git would", name)
		}
	}
}

func TestNameFor(t *testing.T) {
	for in, want := range map[string]string{
		"myrepo":                       "myrepo",
		"/home/me/src/my repo":         "my-repo",
		"https://example.com/me/x.git": "x",
		"git@github.com:me/proj.git":   "proj",
		"file:///srv/served.git/":      "served",
		"...":                          "sandbox",
		"weird..name.lock":             "weird.name",
		"shout.LOCK":                   "shout",
		"/srv/HEAD":                    "HEAD-sandbox",
		"/srv/fetch_head":              "fetch_head-sandbox",
	} {
		got := NameFor(in)
		if got != want {
			t.Errorf("NameFor(%q) = %q, want %q", in, got, want)
		}
		if err := ValidateName(got); err != nil {
			t.Errorf("NameFor(%q) = %q, which is not valid: %v", in, got, err)
		}
	}
}
