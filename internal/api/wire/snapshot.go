package wire

import "time"

// SnapshotManifest is what a snapshot holds.
type SnapshotManifest struct {
	// ID names the snapshot: its UTC time and a random suffix, so IDs sort by time.
	ID      string    `json:"id"`
	Sandbox string    `json:"sandbox"`
	Note    string    `json:"note,omitempty"`
	Created time.Time `json:"created"`
	// TookMS is how long taking it took.
	TookMS int64 `json:"took_ms"`
	// Meta is the sandbox as it was made.
	Meta SnapshotMeta `json:"meta"`
	// Git is the workspace's repository.
	Git SnapshotGit `json:"git"`
	// Roots are the directories archived whole (deliverables, agents' conversations);
	// Files are their files.
	Roots []string       `json:"roots"`
	Files []SnapshotFile `json:"files"`
	// Sessions are the sandbox's sessions, resumed on restore.
	Sessions []SnapshotSession `json:"sessions"`
	// Left lists what was left out, and why; Included what git ignores but the project's
	// .paddock-backup takes back (listed by a dry run).
	Left     []SnapshotLeft `json:"left_out,omitempty"`
	Included []SnapshotLeft `json:"included,omitempty"`
	// Size is the bytes of every blob the snapshot needs; Uploaded those this snapshot
	// put in the store (the rest were there already).
	Size     int64 `json:"size"`
	Uploaded int64 `json:"uploaded"`
}

// SnapshotMeta is the sandbox's making: enough to make it again.
type SnapshotMeta struct {
	Backend    string   `json:"backend"`
	Rootfs     string   `json:"rootfs,omitempty"`
	Image      string   `json:"image,omitempty"`
	Runtime    string   `json:"runtime,omitempty"`
	Network    string   `json:"network"`
	Agents     []string `json:"agents,omitempty"`
	SyncMode   string   `json:"sync_mode,omitempty"`
	SourcePath string   `json:"source_path,omitempty"`
	SourceURL  string   `json:"source_url,omitempty"`
	// NetRules are the sandbox's own egress rules (`paddock net allow|deny --sandbox`).
	NetRules []SnapshotNetRule `json:"net_rules,omitempty"`
	// Limits are the resource limits in force when it was taken, read back from where they
	// are enforced; a restore asks for the same.
	Limits *Limits `json:"limits,omitempty"`
	// IdleStopSeconds is the sandbox's own idle stop.
	IdleStopSeconds int64 `json:"idle_stop_seconds,omitempty"`
}

// SnapshotNetRule is an egress rule of the sandbox's own.
type SnapshotNetRule struct {
	Pattern string `json:"pattern"`
	Action  string `json:"action"`
}

// SnapshotGit is the workspace repository's state.
type SnapshotGit struct {
	// Branch is the checked-out branch (refs/heads/NAME), "" when HEAD is detached at
	// Commit.
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit"`
	// WIP is the commit of the workspace's uncommitted and untracked work (Commit when
	// there is none).
	WIP string `json:"wip"`
	// Refs are every ref and its commit.
	Refs map[string]string `json:"refs"`
	// Bundles hold the objects, oldest first: each needs those before it.
	Bundles []SnapshotBundle `json:"bundles"`
	// Worktrees are the sessions' worktrees.
	Worktrees []SnapshotWorktree `json:"worktrees,omitempty"`
	// Modes is a blob of the permissions git does not keep ("MODE PATH\x00", paths
	// beneath /workspace), absent when every file has git's.
	Modes *Blob `json:"modes,omitempty"`
}

// SnapshotBundle is a git bundle blob, with the checkout it was taken at (a restore starts
// from the first).
type SnapshotBundle struct {
	Blob
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit"`
}

// SnapshotWorktree is a worktree of the workspace and its uncommitted work.
type SnapshotWorktree struct {
	Dir    string `json:"dir"`
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit"`
	WIP    string `json:"wip"`
}

// SnapshotFile is a file of a root: a regular file (its blob), a directory or a symlink.
type SnapshotFile struct {
	Path string `json:"path"`
	Mode uint32 `json:"mode"`
	// Type is "f", "d" or "l".
	Type   string `json:"type"`
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Link   string `json:"link,omitempty"`
}

// SnapshotSession is a session of the sandbox.
type SnapshotSession struct {
	Name     string `json:"name"`
	Agent    string `json:"agent"`
	ResumeID string `json:"resume_id,omitempty"`
	Command  string `json:"command,omitempty"`
	Dir      string `json:"dir,omitempty"`
	Status   string `json:"status,omitempty"`
}

// SnapshotLeft is something a snapshot leaves out.
type SnapshotLeft struct {
	Path string `json:"path"`
	Why  string `json:"why"`
	// OverLimit says it was left out for its size (max_file_mb, max_whole_mb), not by
	// the repository's or the user's rules.
	OverLimit bool `json:"over_limit,omitempty"`
}

// Blob is content in the store, by its sha256.
type Blob struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// SnapshotRequest is what a snapshot is asked for: the body of POST /v1/sandboxes/{name}/snapshots.
type SnapshotRequest struct {
	Note string `json:"note,omitempty"`
	// DryRun lists what would go in and what would be left out, and writes nothing.
	DryRun bool `json:"dry_run,omitempty"`
}

// RestoreRequest says where a snapshot comes back: the body of POST /v1/snapshots/{ref}/restore.
type RestoreRequest struct {
	// Backend is the new sandbox's backend; the snapshot's when empty.
	Backend string `json:"backend,omitempty"`
	// Name is the new sandbox's name; the snapshot's sandbox's when empty.
	Name string `json:"name,omitempty"`
}

// PruneResult is what POST /v1/snapshots/prune answers: the snapshots removed.
type PruneResult struct {
	Removed []string `json:"removed"`
}
