package wire

import "encoding/json"

// The guest's sha256 was once answered as agent_sha256, a name clients may still read:
// a Version is written with it under both names, and read from either, so that a client
// and a daemon from before the guest was called the guest understand each other.

// versionFormer is Version's JSON with the former name beside the new one.
type versionFormer struct {
	versionFields
	FormerGuest string `json:"agent_sha256"`
}

// versionFields is Version without its JSON methods.
type versionFields Version

// MarshalJSON writes v with the guest's sha256 under guest_sha256 and agent_sha256.
func (v Version) MarshalJSON() ([]byte, error) {
	return json.Marshal(versionFormer{versionFields(v), v.Guest})
}

// UnmarshalJSON reads v with the guest's sha256 under guest_sha256 or agent_sha256.
func (v *Version) UnmarshalJSON(data []byte) error {
	var f versionFormer
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	*v = Version(f.versionFields)
	if v.Guest == "" {
		v.Guest = f.FormerGuest
	}
	return nil
}
