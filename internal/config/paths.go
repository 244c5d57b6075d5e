// Package config reads paddock's one configuration file and holds the keys and logins beside it;
// package paths (re-exported here) finds paddock's files.
package config

import "github.com/paddockhq/paddock/internal/config/paths"

// Paths are the places paddock reads and writes (see package paths).
type Paths = paths.Paths

// SystemConfigDir holds the configuration of a daemon run by root.
const SystemConfigDir = paths.SystemConfigDir

// Resolve computes Paths from the environment (see paths.Resolve).
func Resolve() (Paths, error) { return paths.Resolve() }

// ResolveEnv computes Paths from the environment getenv reads (see paths.ResolveEnv).
func ResolveEnv(getenv func(string) string) (Paths, error) { return paths.ResolveEnv(getenv) }

// ForHome returns the paths beneath one PADDOCK_HOME directory.
func ForHome(home string) (Paths, error) { return paths.ForHome(home) }
