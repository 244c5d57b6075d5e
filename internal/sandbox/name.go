package sandbox

import "github.com/paddockhq/paddock/internal/api/wire"

// ValidateName checks a sandbox (or session) name (wire.ValidateName).
func ValidateName(name string) error { return wire.ValidateName(name) }

// NameFor derives a valid name from a repository directory or URL's last element
// (wire.NameFor).
func NameFor(base string) string { return wire.NameFor(base) }
