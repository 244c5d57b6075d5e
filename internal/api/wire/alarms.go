package wire

// ClearAlarmsRequest is the body of POST /v1/sandboxes/{name}/alarms/clear.
type ClearAlarmsRequest struct {
	// ID is the alarm to clear; 0 clears every standing alarm of the sandbox.
	ID int64 `json:"id,omitempty"`
}

// ClearAlarmsResponse says how many alarms a clear acknowledged.
type ClearAlarmsResponse struct {
	Cleared int64 `json:"cleared"`
}
