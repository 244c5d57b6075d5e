package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// keyPart is one part of a dotted key that the editor writes: a bare TOML key.
var keyPart = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Value turns what a user typed into a TOML value: as it is when it is one (a number,
// true, a quoted string, an array), else a string.
func Value(typed string) string {
	var v map[string]any
	if toml.Unmarshal([]byte("v = "+typed), &v) == nil {
		return typed
	}
	return quote(typed)
}

// quote writes a TOML basic string: JSON's escapes are TOML's.
func quote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSpace(b.String())
}

// Set returns the config file's text with key (dotted: "default_backend",
// "backends.kubernetes.namespace") set to value (a TOML value), every other line, and
// every comment, as they were. It refuses what it cannot change in place: a key inside
// an array of tables, or one whose value spans lines.
func Set(data []byte, key, value string) ([]byte, error) {
	parts := strings.Split(key, ".")
	for _, p := range parts {
		if !keyPart.MatchString(p) {
			return nil, fmt.Errorf("%q is not a key: dotted names of letters, digits, '_' and '-'", key)
		}
	}
	table, leaf := strings.Join(parts[:len(parts)-1], "."), parts[len(parts)-1]
	lines := strings.Split(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	current := ""            // the table of the line being read
	inTable := table == ""   // whether that is the one key is in
	seenTable := table == "" // whether the table's header exists
	lastKey := -1            // the table's last key line, to add after
	firstHeader := -1
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "[") {
			if firstHeader < 0 {
				firstHeader = i
			}
			if strings.HasPrefix(trimmed, "[[") {
				current, inTable = "", false
				if name := headerName(trimmed[1:]); name == table || strings.HasPrefix(table, name+".") {
					return nil, fmt.Errorf("%s is in an array of tables ([[%s]]): edit the file by hand", key, name)
				}
				continue
			}
			current = headerName(trimmed)
			inTable = current == table
			if inTable {
				seenTable, lastKey = true, i
			}
			continue
		}
		if !inTable || trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		lastKey = i
		name, rest, ok := strings.Cut(trimmed, "=")
		if !ok || strings.Trim(strings.TrimSpace(name), `"'`) != leaf {
			continue
		}
		old := strings.TrimSpace(rest)
		comment := trailingComment(old)
		if multiline(strings.TrimSpace(strings.TrimSuffix(old, comment))) {
			return nil, fmt.Errorf("%s's value spans lines: edit the file by hand", key)
		}
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		lines[i] = indent + leaf + " = " + value
		if comment != "" {
			lines[i] += "  " + comment
		}
		return []byte(strings.Join(lines, "\n") + "\n"), nil
	}
	entry := leaf + " = " + value
	switch {
	case !seenTable:
		if len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) != "" {
			lines = append(lines, "")
		}
		lines = append(lines, "["+table+"]", entry)
	case table == "" && firstHeader >= 0:
		// Before the first table, after the root's last key (or at the top).
		at := 0
		if lastKey >= 0 && lastKey < firstHeader {
			at = lastKey + 1
		}
		lines = append(lines[:at], append([]string{entry}, lines[at:]...)...)
	case lastKey >= 0:
		lines = append(lines[:lastKey+1], append([]string{entry}, lines[lastKey+1:]...)...)
	default:
		lines = append(lines, entry)
	}
	return []byte(strings.Join(lines, "\n") + "\n"), nil
}

// headerName is a table header's dotted name, without brackets, quotes or a comment.
func headerName(h string) string {
	h = strings.TrimPrefix(h, "[")
	end := strings.Index(h, "]")
	if end < 0 {
		return h
	}
	parts := strings.Split(h[:end], ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// trailingComment is the "# ..." after a value, outside any string; "" when none.
func trailingComment(v string) string {
	var quote byte
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return v[i:]
		}
	}
	return ""
}

// multiline says a value goes on past its line: a multi-line string, or an array or
// inline table left open.
func multiline(v string) bool {
	if strings.HasPrefix(v, `"""`) || strings.HasPrefix(v, `'''`) {
		return true
	}
	return (strings.HasPrefix(v, "[") && !strings.HasSuffix(v, "]")) || (strings.HasPrefix(v, "{") && !strings.HasSuffix(v, "}"))
}

// format writes a value as TOML, strings as basic strings ("...").
func format(v any) string {
	if str, ok := v.(string); ok {
		return quote(str)
	}
	b, _ := toml.Marshal(map[string]any{"v": v})
	return strings.TrimSpace(strings.TrimPrefix(string(b), "v = "))
}

// Settings are every key of a config file that has a value, dotted, and the value as
// TOML, sorted.
func Settings(data []byte) ([][2]string, error) {
	var m map[string]any
	if err := toml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	var out [][2]string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if t, ok := v.(map[string]any); ok {
			for k, sub := range t {
				walk(strings.TrimPrefix(prefix+"."+k, "."), sub)
			}
			return
		}
		out = append(out, [2]string{prefix, format(v)})
	}
	walk("", m)
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out, nil
}

// Edit sets key to value in the config file at path, keeping its comments, after
// checking that the result loads (a key this version does not know, or a value of the
// wrong kind, is refused and the file left as it was). It returns the value as written.
func Edit(path, key, typed string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	value := Value(typed)
	out, err := Set(data, key, value)
	if err != nil {
		return "", err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".new")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return "", err
	}
	if _, err := Load(tmp); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("not set: %s", strings.ReplaceAll(err.Error(), tmp, path))
	}
	settings, _ := Settings(out)
	found := false
	for _, kv := range settings {
		found = found || kv[0] == key
	}
	if !found {
		os.Remove(tmp)
		return "", fmt.Errorf("not set: %s did not come out as a key of the file (a dotted key written another way?): edit it by hand", key)
	}
	return value, os.Rename(tmp, path)
}
