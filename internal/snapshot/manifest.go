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
	"github.com/paddockhq/paddock/internal/api/wire"
)

// Manifest is wire.SnapshotManifest.
type Manifest = wire.SnapshotManifest

// Meta is wire.SnapshotMeta.
type Meta = wire.SnapshotMeta

// NetRule is wire.SnapshotNetRule.
type NetRule = wire.SnapshotNetRule

// Git is wire.SnapshotGit.
type Git = wire.SnapshotGit

// Bundle is wire.SnapshotBundle.
type Bundle = wire.SnapshotBundle

// Worktree is wire.SnapshotWorktree.
type Worktree = wire.SnapshotWorktree

// Blob is wire.Blob.
type Blob = wire.Blob

// File is wire.SnapshotFile.
type File = wire.SnapshotFile

// Session is wire.SnapshotSession.
type Session = wire.SnapshotSession

// Left is wire.SnapshotLeft.
type Left = wire.SnapshotLeft

// blobs lists every blob the manifest needs.
func blobs(m *Manifest) []Blob {
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
