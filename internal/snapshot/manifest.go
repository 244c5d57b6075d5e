// Package snapshot takes a sandbox's work into a store and brings it back as a new
// sandbox, on any backend, with its sessions resumed.
//
// A snapshot is a manifest (snapshots/SANDBOX/ID.json, written last, so a snapshot
// exists only once whole) naming content-addressed blobs (blobs/sha256/..): the git
// bundles of the workspace (every ref, and the uncommitted and untracked work as the
// WIP commits sync makes; each bundle after a sandbox's first holds only what is new),
// the file modes git does not keep, and the files outside git that must survive:
// /workspace/deliverables whole, and each agent's conversations (every transcript,
// and the chains an agent makes when it resumes). A blob already in the store is
// never uploaded again, so a second snapshot costs what changed, and a snapshot cut
// off resumes where it stopped.
package snapshot

import (
	"time"

	"github.com/paddockhq/paddock/internal/backend"
)

// Manifest is what a snapshot holds.
type Manifest struct {
	// ID names the snapshot: its UTC time and a random suffix, so IDs sort by time.
	ID      string    `json:"id"`
	Sandbox string    `json:"sandbox"`
	Note    string    `json:"note,omitempty"`
	Created time.Time `json:"created"`
	// TookMS is how long taking it took.
	TookMS int64 `json:"took_ms"`
	// Meta is the sandbox as it was made.
	Meta Meta `json:"meta"`
	// Git is the workspace's repository.
	Git Git `json:"git"`
	// Roots are the directories archived whole (deliverables, agents' conversations);
	// Files are their files.
	Roots []string `json:"roots"`
	Files []File   `json:"files"`
	// Sessions are the sandbox's sessions, resumed on restore.
	Sessions []Session `json:"sessions"`
	// Left lists what was left out, and why; Included what git ignores but the project's
	// .paddock-backup takes back (listed by a dry run).
	Left     []Left `json:"left_out,omitempty"`
	Included []Left `json:"included,omitempty"`
	// Size is the bytes of every blob the snapshot needs; Uploaded those this snapshot
	// put in the store (the rest were there already).
	Size     int64 `json:"size"`
	Uploaded int64 `json:"uploaded"`
}

// Meta is the sandbox's making: enough to make it again.
type Meta struct {
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
	NetRules []NetRule `json:"net_rules,omitempty"`
	// Limits are the resource limits in force when it was taken, read back from where they
	// are enforced; a restore asks for the same.
	Limits *backend.Limits `json:"limits,omitempty"`
	// IdleStopSeconds is the sandbox's own idle stop.
	IdleStopSeconds int64 `json:"idle_stop_seconds,omitempty"`
}

// NetRule is an egress rule of the sandbox's own.
type NetRule struct {
	Pattern string `json:"pattern"`
	Action  string `json:"action"`
}

// Git is the workspace repository's state.
type Git struct {
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
	Bundles []Bundle `json:"bundles"`
	// Worktrees are the sessions' worktrees.
	Worktrees []Worktree `json:"worktrees,omitempty"`
	// Modes is a blob of the permissions git does not keep ("MODE PATH\x00", paths
	// beneath /workspace), absent when every file has git's.
	Modes *Blob `json:"modes,omitempty"`
}

// Bundle is a git bundle blob, with the checkout it was taken at (a restore starts
// from the first).
type Bundle struct {
	Blob
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit"`
}

// Worktree is a worktree of the workspace and its uncommitted work.
type Worktree struct {
	Dir    string `json:"dir"`
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit"`
	WIP    string `json:"wip"`
}

// Blob is content in the store, by its sha256.
type Blob struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// File is a file of a root: a regular file (its blob), a directory or a symlink.
type File struct {
	Path string `json:"path"`
	Mode uint32 `json:"mode"`
	// Type is "f", "d" or "l".
	Type   string `json:"type"`
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Link   string `json:"link,omitempty"`
}

// Session is a session of the sandbox.
type Session struct {
	Name     string `json:"name"`
	Agent    string `json:"agent"`
	ResumeID string `json:"resume_id,omitempty"`
	Command  string `json:"command,omitempty"`
	Dir      string `json:"dir,omitempty"`
	Status   string `json:"status,omitempty"`
}

// Left is something a snapshot leaves out.
type Left struct {
	Path string `json:"path"`
	Why  string `json:"why"`
	// OverLimit says it was left out for its size (max_file_mb, max_whole_mb), not by
	// the repository's or the user's rules.
	OverLimit bool `json:"over_limit,omitempty"`
}

// blobs lists every blob the manifest needs.
func (m *Manifest) blobs() []Blob {
	var out []Blob
	for _, b := range m.Git.Bundles {
		out = append(out, b.Blob)
	}
	if m.Git.Modes != nil {
		out = append(out, *m.Git.Modes)
	}
	for _, f := range m.Files {
		if f.Type == "f" {
			out = append(out, Blob{SHA256: f.SHA256, Size: f.Size})
		}
	}
	return out
}

// manifestKey is where a snapshot's manifest is kept.
func manifestKey(sandbox, id string) string { return "snapshots/" + sandbox + "/" + id + ".json" }
