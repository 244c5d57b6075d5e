package wire

// FileInfo is what GET /v1/sandboxes/{name}/stat returns.
type FileInfo struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	Mode uint32 `json:"mode"`
	// Type is one of "file", "dir", "symlink", "other".
	Type string `json:"type"`
	Link string `json:"link,omitempty"`
	// MTime is the modification time, in Unix nanoseconds.
	MTime int64 `json:"mtime"`
}
