package guestproto

// Kinds of the events the guest's Events service sends; agent.proto documents each
// one's attrs.
const (
	EventHeartbeat     = "heartbeat"
	EventSessionStatus = "session-status"
	EventSessionExited = "session-exited"
	EventPortOpen      = "port-open"
	EventPortClosed    = "port-closed"
	EventBranchMoved   = "branch-moved"
)
