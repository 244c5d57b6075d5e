package wire

// RemoveRequest says how DELETE /v1/sandboxes/{name} removes a sandbox: the query's
// force and purge. The answer is a progress stream whose last line carries the final
// snapshot's manifest, when one was taken.
type RemoveRequest struct {
	// Force removes a running sandbox too.
	Force bool `json:"force,omitempty"`
	// Purge removes it without a final snapshot.
	Purge bool `json:"purge,omitempty"`
}
