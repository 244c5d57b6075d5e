// Package backendtest is the conformance suite every backend must pass. A backend's test
// calls Run with a Harness; the suite drives the backend through its lifecycle and checks,
// through the real guest, exec, PTYs, files, tunnels and isolation. The checks themselves
// are in package conform, which `paddock verify` runs too.
package backendtest

import (
	"testing"

	"github.com/paddockhq/paddock/internal/backend/conform"
)

// Harness is what the suite needs from a backend's test.
type Harness = conform.Harness

// Run runs the whole suite, each check a subtest of t.
func Run(t *testing.T, h Harness) {
	conform.Suite(adapt{t}, h)
}

// adapt is a *testing.T as a conform.T: its subtests are subtests of the test.
type adapt struct{ *testing.T }

func (a adapt) Run(name string, f func(t conform.T)) bool {
	return a.T.Run(name, func(t *testing.T) { f(adapt{t}) })
}
