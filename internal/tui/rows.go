package tui

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// rowKind is what a line of the list stands for.
type rowKind int

const (
	rowProject rowKind = iota
	rowSandbox
	rowSession
	rowRun
)

// runsShown is how many finished runs a sandbox shows, after those at work.
const runsShown = 3

// row is one line of the list.
type row struct {
	kind    rowKind
	project string // the project's path (or URL); "" for sandboxes without one
	sandbox string
	session string
	run     string // a run's id
	// count is, on a project line, how many sessions it holds.
	count int
}

// key names a row stably across refreshes, so the selection follows the same thing.
func (r row) key() string {
	switch r.kind {
	case rowProject:
		return "p:" + r.project
	case rowSandbox:
		return "b:" + r.sandbox
	case rowRun:
		return "r:" + r.run
	}
	return "s:" + r.sandbox + "/" + r.session
}

// projectOf is the project a sandbox belongs to.
func projectOf(sb wire.SandboxInfo) string {
	if sb.SourcePath != "" {
		return sb.SourcePath
	}
	return sb.SourceURL
}

// projectTitle is how a project is named on its line.
func projectTitle(p string) string {
	if p == "" {
		return "(no project)"
	}
	return filepath.Base(p) + "  " + p
}

// buildRows lays the state out as lines: projects in name order, their sandboxes, and
// each sandbox's sessions. A filter keeps sessions (and their sandboxes and projects)
// whose sandbox/session, agent or status contains it.
func buildRows(sandboxes map[string]wire.SandboxInfo, sessions map[string][]wire.SessionInfo, runs map[string][]wire.Run, collapsed map[string]bool, filter string) []row {
	filter = strings.ToLower(strings.TrimSpace(filter))
	byProject := map[string][]string{}
	for name, sb := range sandboxes {
		p := projectOf(sb)
		byProject[p] = append(byProject[p], name)
	}
	projects := make([]string, 0, len(byProject))
	for p := range byProject {
		projects = append(projects, p)
	}
	sort.Slice(projects, func(i, j int) bool {
		return strings.ToLower(filepath.Base(projects[i])+projects[i]) < strings.ToLower(filepath.Base(projects[j])+projects[j])
	})
	var out []row
	for _, p := range projects {
		names := byProject[p]
		sort.Strings(names)
		var body []row
		total := 0
		for _, name := range names {
			sb := sandboxes[name]
			list := sessions[name]
			var kept []row
			for _, se := range list {
				if filter != "" && !matches(filter, sb, se) {
					continue
				}
				kept = append(kept, row{kind: rowSession, project: p, sandbox: name, session: se.Name})
			}
			finished := 0
			for _, r := range runs[name] { // newest first
				if r.Status != "running" {
					if finished == runsShown {
						continue
					}
					finished++
				}
				if filter != "" && !runMatches(filter, sb, r) {
					continue
				}
				kept = append(kept, row{kind: rowRun, project: p, sandbox: name, run: r.ID})
			}
			if filter != "" && len(kept) == 0 && !strings.Contains(strings.ToLower(name), filter) {
				continue
			}
			total += len(kept)
			body = append(body, row{kind: rowSandbox, project: p, sandbox: name, count: len(kept)})
			body = append(body, kept...)
		}
		if filter != "" && len(body) == 0 {
			continue
		}
		out = append(out, row{kind: rowProject, project: p, count: total})
		if !collapsed[p] {
			out = append(out, body...)
		}
	}
	return out
}

func runMatches(filter string, sb wire.SandboxInfo, r wire.Run) bool {
	for _, s := range []string{sb.Name + "/" + r.ID, r.Title, r.Status, "run"} {
		if strings.Contains(strings.ToLower(s), filter) {
			return true
		}
	}
	return false
}

func matches(filter string, sb wire.SandboxInfo, se wire.SessionInfo) bool {
	for _, s := range []string{sb.Name + "/" + se.Name, se.Agent, se.Status, sb.Backend} {
		if strings.Contains(strings.ToLower(s), filter) {
			return true
		}
	}
	return false
}
