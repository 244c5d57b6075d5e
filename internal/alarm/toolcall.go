package alarm

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/paddockhq/paddock/internal/transcript"
)

// procRoot matches a reach into a process's view of the file system through /proc: its
// root, working directory or open files (/proc/1/root/etc/shadow reads the host's file
// where the sandbox shares a pid namespace with it; an agent went around a denied path
// that way). /proc/self's own cwd and fd are everyday shell (2>/proc/self/fd/2); its root
// is not.
var procRoot = regexp.MustCompile(`/proc/(?:[0-9]+|\*|\$[A-Za-z_{][A-Za-z_0-9}]*)/(?:root|cwd|fd)\b|/proc/(?:self|thread-self)/root\b`)

// patchFile finds the files a Codex patch (apply_patch) adds, updates, deletes or moves to.
var patchFile = regexp.MustCompile(`(?m)^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$`)

// pathKeys are the input fields the agents' file tools name their file in.
var pathKeys = []string{"file_path", "path", "filePath", "notebook_path", "absolute_path", "target_file"}

// ToolEntry reads one transcript entry: a tool call whose input reaches into /proc, a
// write or edit tool call (Claude Code's Write, Edit; Gemini CLI's write_file, replace;
// Codex's apply_patch; OpenCode's write, edit) or a file change whose file is a control
// file (ControlFile). It sees what an agent asked for even when the file system shows
// nothing (a read of /proc/1/root/etc/hostname writes nothing).
func ToolEntry(e transcript.Entry) []Finding {
	var out []Finding
	add := func(f Finding) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	switch e.Kind {
	case transcript.KindFileChange:
		if why := ControlFile(e.Path); why != "" {
			add(ControlFinding(e.Path, why, "transcript", "changed"))
		}
	case transcript.KindToolCall:
		input := inputText(e.Input)
		if m := procRoot.FindString(input); m != "" {
			add(Finding{Kind: KindProcRoot, Source: "transcript",
				Detail: e.Tool + " reaches " + m + ": " + clip(oneLine(input), 200)})
		}
		if !writes(e.Tool) {
			break
		}
		for _, p := range inputPaths(e.Input, input) {
			if why := ControlFile(p); why != "" {
				add(ControlFinding(p, why, "transcript", "changed"))
			}
		}
	}
	return out
}

// ControlFinding is the alarm of control file p (why: alarm.ControlFile's answer)
// "changed" or "removed", seen by source: worded alike whoever saw it, so that one write
// seen both in a transcript and by the file watch stands as one alarm.
func ControlFinding(p, why, source, change string) Finding {
	if change != "removed" {
		change = "changed"
	}
	return Finding{Kind: KindControlFile, Source: source, Detail: "control file " + change + ": " + clip(p, 300) + " (" + why + ")"}
}

// writes says whether a tool of that name writes files.
func writes(tool string) bool {
	t := strings.ToLower(tool)
	for _, w := range []string{"write", "edit", "replace", "patch", "create"} {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

// inputText is a tool input as text: a JSON string's value, else the JSON itself.
func inputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// inputPaths are the files a write tool's input names.
func inputPaths(raw json.RawMessage, text string) []string {
	var out []string
	var fields map[string]any
	if json.Unmarshal(raw, &fields) == nil {
		for _, k := range pathKeys {
			if s, ok := fields[k].(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	for _, m := range patchFile.FindAllStringSubmatch(text, -1) {
		out = append(out, strings.TrimSpace(m[1]))
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
