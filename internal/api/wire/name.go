package wire

import (
	"strings"

	"github.com/paddockhq/paddock/internal/apperr"
)

// A name is like a git branch name without slashes (a slash separates a sandbox from a
// session, as in myrepo/fix-auth-bug): letters, digits, '.', '_' and '-', starting with a
// letter or digit, at most 63 characters, no "..", not ending in ".lock" or ".". Names
// become parts of git refs (refs/paddock/NAME/...) and of paddock::NAME remote URLs, so
// a name git gives a meaning of its own is refused too. The checks are written out, not
// regular expressions: the lean front links this package, and compiling them cost every
// command's start.
func nameChars(name string) bool {
	if len(name) == 0 || len(name) > 63 || !isAlnum(name[0]) {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// pseudoRef says whether name (of nameChars' characters) is one of git's pseudo-refs or
// the refs it keeps at the top of .git (HEAD, FETCH_HEAD, ORIG_HEAD, MERGE_HEAD,
// CHERRY_PICK_HEAD, REVERT_HEAD, REBASE_HEAD, BISECT_HEAD...): git reads any all-capitals
// name ending in _HEAD as one. It is matched without regard to case, since macOS and
// Windows filesystems see head and HEAD as one file.
func pseudoRef(name string) bool {
	lower := strings.ToLower(name)
	prefix, ok := strings.CutSuffix(lower, "head")
	if !ok || prefix == "" {
		return ok
	}
	return strings.HasSuffix(prefix, "_") && strings.Trim(prefix, "abcdefghijklmnopqrstuvwxyz_") == ""
}

// gitSpecial are the other names git keeps at the top of .git or treats specially.
var gitSpecial = map[string]bool{
	"auto_merge": true, "merge_autostash": true, "bisect_expected_rev": true,
	"notes_merge_partial": true, "notes_merge_ref": true,
}

// ValidateName checks a sandbox (or session) name.
func ValidateName(name string) error {
	if !nameChars(name) || strings.Contains(name, "..") ||
		strings.HasSuffix(strings.ToLower(name), ".lock") || strings.HasSuffix(name, ".") {
		return apperr.Invalid("choose a name of letters, digits, '.', '_' and '-' (e.g. --name my-repo)",
			"invalid sandbox name %q: a name starts with a letter or digit, holds only letters, digits, '.', '_' and '-', is at most 63 characters, has no '..' and does not end in '.' or '.lock'", name)
	}
	if pseudoRef(name) || gitSpecial[strings.ToLower(name)] {
		return apperr.Invalid("choose another name (e.g. --name my-repo)",
			"invalid sandbox name %q: git gives this name a meaning of its own (in any case), and paddock uses names in git refs", name)
	}
	return nil
}

// NameFor derives a valid name from a repository directory or URL's last element.
func NameFor(base string) string {
	base = strings.TrimSuffix(strings.TrimSuffix(base, "/"), ".git")
	if i := strings.LastIndexAny(base, "/:"); i >= 0 {
		base = base[i+1:]
	}
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-._")
	for strings.Contains(name, "..") {
		name = strings.ReplaceAll(name, "..", ".")
	}
	for strings.HasSuffix(strings.ToLower(name), ".lock") {
		name = strings.Trim(name[:len(name)-len(".lock")], "-._")
	}
	if len(name) > 63 {
		name = strings.Trim(name[:63], "-._")
	}
	if name == "" {
		name = "sandbox"
	}
	if ValidateName(name) != nil {
		// A repository named like one of git's own refs (head, FETCH_HEAD...).
		name += "-sandbox"
	}
	return name
}
