package bwrap

import "github.com/paddockhq/paddock/internal/backend"

// CgroupDirs are the directories of a sandbox's cgroup (one per controller on v1); none
// when sandboxes get no cgroup here.
func (b *Bwrap) CgroupDirs(id backend.ID) []string { return b.cg.sandbox(id).dirs }

// CgroupVersion is 1 or 2, or 0 when sandboxes get no cgroup here.
func (b *Bwrap) CgroupVersion() int { return b.cg.version }

// DisableLimits turns off cgroups and sized mounts: today's sandbox without limits, the
// benchmarks' baseline.
func (b *Bwrap) DisableLimits() { b.noLimits = true }
