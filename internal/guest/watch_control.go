package guest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
	"github.com/paddockhq/paddock/internal/inside"
)

// The control watcher reports changes to the files an agent's controls live in: its
// agent's settings and hooks (paddock's own hooks that report the session's status among
// them), git's hooks and config, MCP configs and what the host runs once the work is
// merged. The daemon decides which changes are alarms (internal/alarm); the guest names
// the candidates, a few dozen stats a look.
//
// It looks every pollInterval, as the branch watcher does, rather than keeping inotify
// watches: the directories come and go (the workspace is cloned after the guest starts),
// and a look is a handful of stats. Nothing counts until a session first starts (the
// sessions' tmux server is up): before that, the daemon seeds the workspace and writes the agents'
// files. The daemon's own writes (Files.Write, the file stream) are told apart by the
// file's state after them (ownWrite): a write of the agent's after that is a change.

// controlDirs are directories whose files (not subdirectories) are candidates; Workspace
// and inside.Home are put in front.
var (
	controlWorkspaceDirs  = []string{".git/hooks", ".claude", ".claude/hooks", ".codex", ".gemini", ".qwen", ".vscode", ".devcontainer", ".husky", ".githooks"}
	controlWorkspaceFiles = []string{".git/config", ".git/info/attributes", ".mcp.json", ".envrc", ".pre-commit-config.yaml", ".gitattributes", ".devcontainer.json"}
	controlHomeDirs       = []string{".claude/hooks"}
	controlHomeFiles      = []string{".claude/settings.json", ".claude/settings.local.json", ".codex/config.toml", ".gemini/settings.json", ".qwen/settings.json", ".mcp.json"}
)

// controlDirLimit bounds how many entries of one directory are followed.
const controlDirLimit = 256

// fileStamp is what a look keeps of a file: enough to see it was replaced or written.
type fileStamp struct {
	size  int64
	mtime int64
	ino   uint64
	mode  os.FileMode
}

// controlState is what the control watcher knows between two looks.
type controlState struct {
	armed bool
	seen  map[string]fileStamp
}

// scanControl reports each candidate file created, changed or removed since the last
// look, once a session has started; own says whether a file's stamp is the daemon's own
// write.
func (st *controlState) scanControl(workspace, home, statusDir string, own func(string, fileStamp) bool, emit func(*guestpb.Event)) {
	now := controlStamps(workspace, home)
	if !st.armed {
		st.seen = now
		st.armed = sessionStarted(statusDir)
		return
	}
	for p, s := range now {
		old, ok := st.seen[p]
		if ok && old == s || own(p, s) {
			continue
		}
		change := "modified"
		if !ok {
			change = "created"
		}
		emit(newEvent(guestproto.EventControlChanged, map[string]string{"path": p, "change": change}))
	}
	for p := range st.seen {
		if _, ok := now[p]; !ok {
			emit(newEvent(guestproto.EventControlChanged, map[string]string{"path": p, "change": "removed"}))
		}
	}
	st.seen = now
}

// tmuxSocket is the sessions' tmux server's socket (session.Socket): it exists once the
// first session started, after the daemon prepared its agent's files.
var tmuxSocket = filepath.Join(inside.Run, "tmux.sock")

// sessionStarted says whether a session started: the sessions' tmux server's socket or
// a session's status file exists.
func sessionStarted(statusDir string) bool {
	if statusDir == "" {
		return true
	}
	if _, err := os.Lstat(tmuxSocket); err == nil {
		return true
	}
	d, err := os.Open(statusDir)
	if err != nil {
		return false
	}
	defer d.Close()
	names, _ := d.Readdirnames(1)
	return len(names) > 0
}

// scratchName says whether a file's name is a writer's scratch, which nothing runs: a
// lock, the guest's own temporary, an editor's backup, or the temporary a writer renames
// over the file (Claude Code writes settings.json.tmp.PID.HEX). The rename is seen under
// the file's own name.
func scratchName(n string) bool {
	return strings.HasSuffix(n, ".lock") || strings.HasPrefix(n, tempPrefix) || strings.HasSuffix(n, "~") ||
		strings.HasSuffix(n, ".swp") || strings.HasSuffix(n, ".tmp") || strings.Contains(n, ".tmp.")
}

// controlStamps stats every candidate file.
func controlStamps(workspace, home string) map[string]fileStamp {
	out := map[string]fileStamp{}
	add := func(p string) {
		if s, ok := stampOf(p); ok {
			out[p] = s
		}
	}
	list := func(dir string) {
		d, err := os.Open(dir)
		if err != nil {
			return
		}
		names, _ := d.Readdirnames(controlDirLimit)
		d.Close()
		for _, n := range names {
			if scratchName(n) {
				continue
			}
			p := filepath.Join(dir, n)
			if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
				add(p)
			}
		}
	}
	if workspace != "" {
		for _, d := range controlWorkspaceDirs {
			list(filepath.Join(workspace, d))
		}
		for _, f := range controlWorkspaceFiles {
			add(filepath.Join(workspace, f))
		}
	}
	if home != "" {
		for _, d := range controlHomeDirs {
			list(filepath.Join(home, d))
		}
		for _, f := range controlHomeFiles {
			add(filepath.Join(home, f))
		}
	}
	return out
}

// stampOf is the stamp of the file at p, not following a symlink there.
func stampOf(p string) (fileStamp, bool) {
	fi, err := os.Lstat(p)
	if err != nil || fi.IsDir() {
		return fileStamp{}, false
	}
	s := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = sys.Ino
	}
	return s, true
}

// controlHome is the agent's home the control watcher looks in.
var controlHome = inside.Home

// ownWrite records that the daemon wrote the file at p (Files.Write, the file stream):
// the control watcher does not report it in the state the write left it in.
func (s *Server) ownWrite(p string) {
	st, ok := stampOf(p)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ownWrites == nil || len(s.ownWrites) >= 1024 {
		s.ownWrites = map[string]fileStamp{}
	}
	s.ownWrites[p] = st
}

// isOwnWrite says whether st is the state the daemon's last write of p left it in.
func (s *Server) isOwnWrite(p string, st fileStamp) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	own, ok := s.ownWrites[p]
	return ok && own == st
}
