package wire

import "time"

// ClearAlarmsRequest is the body of POST /v1/sandboxes/{name}/alarms/clear.
type ClearAlarmsRequest struct {
	// ID is the alarm to clear; 0 clears every standing alarm of the sandbox.
	ID int64 `json:"id,omitempty"`
}

// ClearAlarmsResponse says how many alarms a clear acknowledged.
type ClearAlarmsResponse struct {
	Cleared int64 `json:"cleared"`
}

// AlarmFinding is one thing a detector saw.
type AlarmFinding struct {
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Detail says what was seen, for people; it holds text from the sandbox, to be
	// escaped for a terminal (termtext) and never used as a host path.
	Detail string `json:"detail"`
	// Source says how it was seen: "files" (the guest's watch), "transcript" (an
	// agent's tool call) or "egress" (the egress proxy).
	Source string `json:"source"`
}

// Alarm is a finding as the daemon keeps it.
type Alarm struct {
	ID      int64     `json:"id"`
	Sandbox string    `json:"sandbox"`
	Session string    `json:"session,omitempty"`
	Time    time.Time `json:"time"`
	AlarmFinding
	// Cleared is when the user acknowledged it; zero while it stands.
	Cleared time.Time `json:"cleared,omitzero"`
}
