package sshhost

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
)

// TestCreateNamesTheGuestAsBefore: a create call names the guest binary as hosts of
// earlier versions read it (AgentBinary, AgentSHA256), and a host reads a create from a
// daemon of an earlier version.
func TestCreateNamesTheGuestAsBefore(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(request{Op: opCreate, Spec: &backend.Spec{GuestBinary: "/g", GuestSHA256: "ab"}})
	if err != nil || !strings.Contains(string(data), `"AgentBinary":"/g","AgentSHA256":"ab"`) {
		t.Errorf("create = %s, %v; want the guest as AgentBinary and AgentSHA256", data, err)
	}
	var req request
	err = json.Unmarshal([]byte(`{"op":"create","spec":{"ID":"x","AgentBinary":"/g","AgentSHA256":"ab"}}`), &req)
	if err != nil || req.Spec == nil || req.Spec.GuestBinary != "/g" || req.Spec.GuestSHA256 != "ab" {
		t.Errorf("an earlier daemon's create read as %+v, %v", req.Spec, err)
	}
}
