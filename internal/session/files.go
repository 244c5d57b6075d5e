package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/limitbuf"
)

// writeFile writes an agent's file into the sandbox; a Merge file is merged into the
// JSON object already there, and a Section replaces its part of a text file, so what
// the user or another session wrote survives.
func writeFile(ctx context.Context, c *guestclient.Client, f agents.File) error {
	content := f.Content
	if f.Section != "" {
		text, err := readFile(ctx, c, f.Path, maxAgentFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		content = withSection(text, f.Section, f.Content)
	}
	if f.Merge != nil {
		existing := map[string]any{}
		data, err := readFile(ctx, c, f.Path, maxAgentFile)
		switch {
		case err == nil:
			if jerr := json.Unmarshal(data, &existing); jerr != nil {
				return fmt.Errorf("%s holds invalid JSON, which paddock will not overwrite: %w", f.Path, jerr)
			}
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		merged, err := json.MarshalIndent(merge(existing, f.Merge), "", "  ")
		if err != nil {
			return err
		}
		content = merged
	}
	mode := fs.FileMode(f.Mode)
	if mode == 0 {
		mode = 0o644
	}
	if err := c.Mkdir(ctx, "/", path.Dir(f.Path), 0o755, true); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	_, err := c.WriteFile(ctx, "/", f.Path, mode, true, bytes.NewReader(content))
	return err
}

// maxAgentFile is the most of an agent's file (its settings, its memory) that
// writeFile reads to keep what is in it: they are a few KiB, written by people.
const maxAgentFile = 16 << 20

// readFile reads the sandbox's file at p into memory, refusing one over max bytes
// (guestclient.ReadFileMax), with an error that names it.
func readFile(ctx context.Context, c *guestclient.Client, p string, max int) ([]byte, error) {
	data, err := c.ReadFileMax(ctx, "/", p, max)
	var tooLarge *limitbuf.TooLargeError
	if errors.As(err, &tooLarge) {
		return nil, fmt.Errorf("%s in the sandbox is too large: %w", p, tooLarge)
	}
	return data, err
}

// merge sets every key of src in dst, merging objects recursively.
func merge(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				dst[k] = merge(dv, sv)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// withSection is text with the section called name holding content: between its
// markers where they are, appended otherwise.
func withSection(text []byte, name string, content []byte) []byte {
	begin, end := []byte("<!-- "+name+" -->\n"), []byte("<!-- /"+name+" -->\n")
	section := append(append(append([]byte(nil), begin...), bytes.TrimRight(content, "\n")...), '\n')
	section = append(section, end...)
	if i := bytes.Index(text, begin); i >= 0 {
		if j := bytes.Index(text[i:], end); j >= 0 {
			return append(append(append([]byte(nil), text[:i]...), section...), text[i+j+len(end):]...)
		}
	}
	if len(text) > 0 && !bytes.HasSuffix(text, []byte("\n\n")) {
		text = append(bytes.TrimRight(text, "\n"), "\n\n"...)
	}
	return append(append([]byte(nil), text...), section...)
}
