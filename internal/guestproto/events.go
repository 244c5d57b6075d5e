package guestproto

// Kinds of the events the guest's Events service sends; guest.proto documents each
// one's attrs.
const (
	EventHeartbeat     = "heartbeat"
	EventSessionStatus = "session-status"
	EventSessionExited = "session-exited"
	EventPortOpen      = "port-open"
	EventPortClosed    = "port-closed"
	EventBranchMoved   = "branch-moved"
	// EventControlChanged is a file the agent's controls live in (its agent's settings
	// and hooks, git's hooks and config, files the host runs once merged) that changed
	// while a session ran, not by the daemon's own write: attrs path (absolute, inside
	// the sandbox) and change (created, modified, removed). The daemon raises an alarm.
	EventControlChanged = "control-changed"
)
