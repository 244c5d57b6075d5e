// Package alarm tells when an agent goes for its own controls: it rewrites its agent's
// configuration or hooks (paddock's own hooks that report the session's status among
// them), the workspace's git hooks or config or a file the host runs once merged,
// reaches into another process's root through /proc, or carries data out in the names
// it asks the egress proxy to reach. Each detector here is a pure reading of what the
// daemon sees (a path the guest reports, a tool call of a transcript, a host name of the
// egress proxy); the daemon records, shows and notifies what they find. An alarm never
// stops the agent by itself ([alarms] stop does).
package alarm

import (
	"github.com/paddockhq/paddock/internal/api/wire"
)

// Kinds of alarm.
const (
	// KindControlFile is a write to an agent's configuration or hooks, the workspace's
	// git hooks or config, or a file the host runs once merged.
	KindControlFile = "control-file"
	// KindProcRoot is a reach for /proc/PID/root (or cwd, fd) of a process.
	KindProcRoot = "proc-root"
	// KindDNSData is a host name shaped to carry data out (long or random-looking
	// labels, or many distinct names under one parent in a short time).
	KindDNSData = "dns-data"
)

// Finding is wire.AlarmFinding.
type Finding = wire.AlarmFinding

// Alarm is wire.Alarm.
type Alarm = wire.Alarm
