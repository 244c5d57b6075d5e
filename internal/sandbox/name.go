package sandbox

import (
	"regexp"
	"strings"

	"github.com/paddockhq/paddock/internal/apperr"
)

// A name is like a git branch name without slashes (a slash separates a sandbox from a
// session, as in myrepo/fix-auth-bug): letters, digits, '.', '_' and '-', starting with a
// letter or digit, at most 63 characters, no "..", not ending in ".lock" or ".".
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidateName checks a sandbox name.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) || strings.Contains(name, "..") ||
		strings.HasSuffix(name, ".lock") || strings.HasSuffix(name, ".") {
		return apperr.Invalid("choose a name of letters, digits, '.', '_' and '-' (e.g. --name my-repo)",
			"invalid sandbox name %q: a name starts with a letter or digit, holds only letters, digits, '.', '_' and '-', is at most 63 characters, and has no '..'", name)
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
	name = strings.TrimSuffix(name, ".lock")
	if len(name) > 63 {
		name = strings.Trim(name[:63], "-._")
	}
	if name == "" {
		name = "sandbox"
	}
	return name
}
