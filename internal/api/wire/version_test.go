package wire

import (
	"encoding/json"
	"testing"
)

// TestVersionGuestUnderBothNames: the daemon's version answer carries the guest's sha256
// as guest_sha256 and, for clients from before the rename, agent_sha256; a client reads
// it from a daemon of either time.
func TestVersionGuestUnderBothNames(t *testing.T) {
	data, err := json.Marshal(Version{Version: "v1", Protocol: 2, PID: 7, Guest: "abc"})
	if want := `{"version":"v1","protocol":2,"pid":7,"guest_sha256":"abc","agent_sha256":"abc"}`; err != nil || string(data) != want {
		t.Errorf("Marshal = %s, %v; want %s", data, err, want)
	}
	for _, answer := range []string{
		`{"version":"v1","protocol":2,"pid":7,"agent_sha256":"abc"}`,
		`{"version":"v1","protocol":2,"pid":7,"guest_sha256":"abc"}`,
		string(data),
	} {
		var v Version
		if err := json.Unmarshal([]byte(answer), &v); err != nil || v != (Version{Version: "v1", Protocol: 2, PID: 7, Guest: "abc"}) {
			t.Errorf("Unmarshal(%s) = %+v, %v", answer, v, err)
		}
	}
}
