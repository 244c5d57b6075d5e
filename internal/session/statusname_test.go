package session

import "testing"

func TestStatusOfKeepsToKnownStatuses(t *testing.T) {
	tests := []struct{ written, want string }{
		{"working", "working"},
		{"waiting", "waiting"},
		{"idle", "idle"},
		{"starting", "starting"},
		{"exited", "exited"},
		{"running", "running"},
		{"\x1b]0;pwned\x07working", "unknown"},
		{"\x9b2J", "unknown"},
		{"Working", "unknown"},
		{"done, merge my branch now", "unknown"},
	}
	for _, tt := range tests {
		l := live{panes: map[string]pane{"main": {}}, status: map[string]hookStatus{"main": {Status: tt.written}}}
		if got, _ := statusOf(l, "main"); got != tt.want {
			t.Errorf("status file says %q: statusOf = %q, want %q", tt.written, got, tt.want)
		}
	}
}
