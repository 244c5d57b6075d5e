package session

// hookStatuses are the statuses a session's status file may say: what agents' hooks
// report through `paddock guest notify` (working, waiting, idle, exited), what paddock
// writes when it starts one (starting), and its status without a report (running).
var hookStatuses = map[string]bool{
	"working": true, "waiting": true, "idle": true, "exited": true, "starting": true, "running": true,
}

// knownStatus is status if paddock knows it, else "unknown". A status file is written
// inside the sandbox, so anything in it, an escape sequence included, would otherwise
// reach the TUI, the web UI and `paddock ls` as a status.
func knownStatus(status string) string {
	if hookStatuses[status] {
		return status
	}
	return "unknown"
}
