package hostagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
	"github.com/paddockhq/paddock/internal/inside"
)

// Sandbox is what the tools need of a sandbox: the guest's Exec and Files services.
// *guestclient.Client is one.
type Sandbox interface {
	Exec(ctx context.Context, opts guestclient.ExecOptions) (int, error)
	ReadFile(ctx context.Context, root, path string, w io.Writer) (int64, error)
	WriteFile(ctx context.Context, root, path string, mode fs.FileMode, parents bool, r io.Reader) (int64, error)
	Stat(ctx context.Context, root, path string) (*guestpb.FileInfo, error)
	List(ctx context.Context, root, path string) ([]*guestpb.FileInfo, error)
}

// Limits on what a tool hands the model; the run keeps the whole output.
const (
	// maxToolText is the most of a tool's output the model sees: its head and tail.
	maxToolText = 30_000
	// maxReadBytes is the largest file read_file reads.
	maxReadBytes = 8 << 20
	// defaultReadLines is how many lines read_file returns without a limit.
	defaultReadLines = 2000
	// maxListEntries is how many entries list_files returns.
	maxListEntries = 1000
	// maxMatches is how many lines search_files returns.
	maxMatches = 200
	// maxSearchFile is the largest file the fallback search reads.
	maxSearchFile = 1 << 20
	// DefaultCommandTimeout bounds run_command when the model gives no timeout.
	DefaultCommandTimeout = 10 * time.Minute
)

// ToolDef describes a tool to the model.
type ToolDef struct {
	Name        string
	Description string
	// Properties is the JSON schema of each input field.
	Properties map[string]any
	Required   []string
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
func integer(desc string) map[string]any {
	return map[string]any{"type": "integer", "description": desc}
}
func boolean(desc string) map[string]any {
	return map[string]any{"type": "boolean", "description": desc}
}

// Definitions are the tools the loop offers, in the order offered.
var Definitions = []ToolDef{
	{Name: "run_command", Description: "Run a shell command (sh -c) in /workspace and return its output and exit code. " +
		"Use it to build, test, run git and inspect the project. Long output is cut to its head and tail.",
		Properties: map[string]any{"command": str("the command line"), "timeout_seconds": integer("kill the command after this many seconds (default 600)")},
		Required:   []string{"command"}},
	{Name: "read_file", Description: "Read a text file, with numbered lines. Paths are relative to /workspace.",
		Properties: map[string]any{"path": str("the file"), "offset": integer("the first line to read, from 1"),
			"limit": integer("how many lines to read (default 2000)")},
		Required: []string{"path"}},
	{Name: "write_file", Description: "Create or replace a file with the given content; parent directories are made.",
		Properties: map[string]any{"path": str("the file"), "content": str("the whole new content")},
		Required:   []string{"path", "content"}},
	{Name: "edit_file", Description: "Replace old_string with new_string in a file. old_string must match exactly once " +
		"(copy it from read_file, without the line numbers), unless replace_all is set.",
		Properties: map[string]any{"path": str("the file"), "old_string": str("the exact text to replace"),
			"new_string": str("the replacement"), "replace_all": boolean("replace every occurrence")},
		Required: []string{"path", "old_string", "new_string"}},
	{Name: "list_files", Description: "List a directory (directories end with /); recursive lists everything beneath, .git excepted.",
		Properties: map[string]any{"path": str("the directory (default: /workspace)"), "recursive": boolean("list beneath too")}},
	{Name: "search_files", Description: "Search file contents for a regular expression; answers path:line:text lines.",
		Properties: map[string]any{"pattern": str("the regular expression"), "path": str("where to search (default: /workspace)"),
			"glob": str("only files whose name matches this glob, e.g. *.go")},
		Required: []string{"pattern"}},
}

// Result is what a tool call gave.
type Result struct {
	// Text is what the model is sent: Full, cut to its head and tail when long.
	Text string
	// Full is the whole output, for the run's record.
	Full    string
	IsError bool
}

func ok(full string) Result { return Result{Text: clip(full), Full: full} }
func fail(format string, args ...any) Result {
	msg := fmt.Sprintf(format, args...)
	return Result{Text: msg, Full: msg, IsError: true}
}

// clip keeps the head and tail of a long text.
func clip(s string) string {
	if len(s) <= maxToolText {
		return s
	}
	head, tail := maxToolText/3, maxToolText*2/3
	return s[:head] + fmt.Sprintf("\n[... %d bytes left out: the run keeps the whole output ...]\n", len(s)-head-tail) + s[len(s)-tail:]
}

// Tools runs tool calls in one sandbox. Paths are taken beneath Root (/workspace): the
// guest refuses any that would leave it, by .. or by a symlink.
type Tools struct {
	SB   Sandbox
	Root string

	rgOnce sync.Once
	hasRg  bool
}

// NewTools returns the tools of a sandbox.
func NewTools(sb Sandbox) *Tools { return &Tools{SB: sb, Root: inside.Workspace} }

// Call runs one tool call. output, when not nil, receives a command's output as it comes.
// A tool that fails answers an error Result for the model; Call's error is only for a
// call that could not be made at all (the sandbox is gone, ctx is done).
func (t *Tools) Call(ctx context.Context, name string, input json.RawMessage, output func(string)) (Result, error) {
	var in struct {
		Command        string `json:"command"`
		TimeoutSeconds int    `json:"timeout_seconds"`
		Path           string `json:"path"`
		Offset         int    `json:"offset"`
		Limit          int    `json:"limit"`
		Content        string `json:"content"`
		OldString      string `json:"old_string"`
		NewString      string `json:"new_string"`
		ReplaceAll     bool   `json:"replace_all"`
		Recursive      bool   `json:"recursive"`
		Pattern        string `json:"pattern"`
		Glob           string `json:"glob"`
	}
	if len(input) > 0 {
		if err := json.Unmarshal(input, &in); err != nil {
			return fail("the input of %s is not valid: %v", name, err), nil
		}
	}
	var r Result
	var err error
	switch name {
	case "run_command":
		r, err = t.runCommand(ctx, in.Command, time.Duration(in.TimeoutSeconds)*time.Second, output)
	case "read_file":
		r, err = t.readFile(ctx, in.Path, in.Offset, in.Limit)
	case "write_file":
		r, err = t.writeFile(ctx, in.Path, in.Content)
	case "edit_file":
		r, err = t.editFile(ctx, in.Path, in.OldString, in.NewString, in.ReplaceAll)
	case "list_files":
		r, err = t.listFiles(ctx, in.Path, in.Recursive)
	case "search_files":
		r, err = t.searchFiles(ctx, in.Pattern, in.Path, in.Glob)
	default:
		return fail("there is no tool %q", name), nil
	}
	if err != nil && ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	return r, err
}

// fileError turns a Files error into an answer for the model, or passes on one that is
// not about the file (the connection to the sandbox failed).
func fileError(p string, err error) (Result, error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail("%s does not exist", p), nil
	case errors.Is(err, guestclient.ErrPathEscapes):
		return fail("%s is outside /workspace (tools work on /workspace only, and follow no symlink out of it)", p), nil
	case errors.Is(err, fs.ErrPermission):
		return fail("%s: permission denied", p), nil
	case errors.Is(err, fs.ErrInvalid), errors.Is(err, fs.ErrExist):
		return fail("%s: %v", p, err), nil
	}
	var ge *guestclient.Error
	if errors.As(err, &ge) && ge.Code != guestproto.Unavailable && ge.Code != guestproto.Canceled && ge.Code != guestproto.DeadlineExceeded {
		return fail("%s: %v", p, err), nil // about the file (a directory where a file was meant, ...)
	}
	return Result{}, err
}

func (t *Tools) runCommand(ctx context.Context, command string, timeout time.Duration, output func(string)) (Result, error) {
	if strings.TrimSpace(command) == "" {
		return fail("command is empty"), nil
	}
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	// At the timeout the command's process group is killed, and Exec returns as for any
	// ending; should its output stay open (a child of its own holding it), the call itself
	// is cut a little later.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := make(chan syscall.Signal, 1)
	var timedOut atomic.Bool
	kill := time.AfterFunc(timeout, func() { timedOut.Store(true); sig <- syscall.SIGKILL })
	defer kill.Stop()
	cut := time.AfterFunc(timeout+5*time.Second, cancel)
	defer cut.Stop()
	out := &streamBuffer{emit: output}
	start := time.Now()
	code, err := t.SB.Exec(cctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", command}, Dir: t.Root, Stdout: out, Stderr: out, Signal: sig})
	text := out.String()
	switch {
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	case timedOut.Load():
		r := ok(text)
		r.IsError = true
		note := fmt.Sprintf("\n[the command did not finish within %s and was killed]", timeout)
		r.Text += note
		r.Full += note
		return r, nil
	case err != nil:
		var start *guestclient.ExecStartError
		if errors.As(err, &start) {
			return fail("the command could not start: %v", err), nil
		}
		return Result{}, err
	}
	r := ok(text)
	status := fmt.Sprintf("\n[exit code %d, %s]", code, time.Since(start).Round(time.Millisecond))
	r.Text += status
	r.Full += status
	r.IsError = code != 0
	return r, nil
}

// streamBuffer keeps a command's output, up to its first and last keepBytes/2 bytes (a
// command in the sandbox must not fill the daemon's memory), and passes each piece on as
// it comes.
type streamBuffer struct {
	mu      sync.Mutex
	head    []byte
	tail    []byte // the latest bytes past head, trimmed to keepBytes/2 now and then
	dropped int64  // bytes between head and tail not kept
	emit    func(string)
}

// keepBytes bounds what a run keeps of one command's output.
const keepBytes = 4 << 20

func (b *streamBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.emit != nil {
		b.emit(string(p))
	}
	rest := p
	if room := keepBytes/2 - len(b.head); room > 0 {
		n := min(room, len(rest))
		b.head = append(b.head, rest[:n]...)
		rest = rest[n:]
	}
	b.tail = append(b.tail, rest...)
	if len(b.tail) > keepBytes {
		cut := len(b.tail) - keepBytes/2
		b.dropped += int64(cut)
		b.tail = append(b.tail[:0], b.tail[cut:]...)
	}
	return len(p), nil
}

func (b *streamBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := b.tail
	dropped := b.dropped
	if len(tail) > keepBytes/2 {
		dropped += int64(len(tail) - keepBytes/2)
		tail = tail[len(tail)-keepBytes/2:]
	}
	out := string(b.head)
	if dropped > 0 {
		out += fmt.Sprintf("\n[... %d bytes of output not kept ...]\n", dropped)
	}
	return strings.ToValidUTF8(out+string(tail), "\uFFFD")
}

// limitWriter keeps the first n bytes and counts the rest.
type limitWriter struct {
	buf   bytes.Buffer
	n     int
	total int64
}

func (w *limitWriter) Write(p []byte) (int, error) {
	w.total += int64(len(p))
	if room := w.n - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// read reads a whole file, refusing one over limit bytes.
func (t *Tools) read(ctx context.Context, p string, limit int) ([]byte, *Result, error) {
	w := &limitWriter{n: limit + 1}
	if _, err := t.SB.ReadFile(ctx, t.Root, p, w); err != nil {
		r, err := fileError(p, err)
		return nil, &r, err
	}
	if w.total > int64(limit) {
		r := fail("%s is %d bytes, more than the %d this tool reads: use run_command (head, sed -n, grep)", p, w.total, limit)
		return nil, &r, nil
	}
	return w.buf.Bytes(), nil, nil
}

// binary reports whether data looks like a binary file: a NUL byte, or not UTF-8.
func binary(data []byte) bool {
	head := data[:min(len(data), 8000)]
	return bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(bytes.TrimRight(head, "\x80\xbf"))
}

func (t *Tools) readFile(ctx context.Context, p string, offset, limit int) (Result, error) {
	if p == "" {
		return fail("path is empty"), nil
	}
	data, r, err := t.read(ctx, p, maxReadBytes)
	if r != nil || err != nil {
		return deref(r), err
	}
	if binary(data) {
		return fail("%s is a binary file (%d bytes): not shown", p, len(data)), nil
	}
	if offset < 1 {
		offset = 1
	}
	if limit <= 0 {
		limit = defaultReadLines
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return ok(fmt.Sprintf("(%s is empty)", p)), nil
	}
	if offset > len(lines) {
		return fail("%s has %d lines; offset %d is past its end", p, len(lines), offset), nil
	}
	var b strings.Builder
	end := min(len(lines), offset-1+limit)
	for i := offset - 1; i < end; i++ {
		fmt.Fprintf(&b, "%6d\t%s", i+1, strings.TrimSuffix(lines[i], "\n")+"\n")
	}
	if end < len(lines) {
		fmt.Fprintf(&b, "[lines %d-%d of %d: read on with offset %d]\n", offset, end, len(lines), end+1)
	}
	return ok(b.String()), nil
}

func deref(r *Result) Result {
	if r == nil {
		return Result{}
	}
	return *r
}

// modeOf is the permission of an existing file, or 0644 for a new one.
func (t *Tools) modeOf(ctx context.Context, p string) fs.FileMode {
	if fi, err := t.SB.Stat(ctx, t.Root, p); err == nil && fi.GetType() == "file" {
		return fs.FileMode(fi.GetMode()).Perm()
	}
	return 0o644
}

func (t *Tools) writeFile(ctx context.Context, p, content string) (Result, error) {
	if p == "" {
		return fail("path is empty"), nil
	}
	n, err := t.SB.WriteFile(ctx, t.Root, p, t.modeOf(ctx, p), true, strings.NewReader(content))
	if err != nil {
		return fileError(p, err)
	}
	return ok(fmt.Sprintf("wrote %d bytes to %s", n, p)), nil
}

func (t *Tools) editFile(ctx context.Context, p, old, repl string, all bool) (Result, error) {
	if p == "" {
		return fail("path is empty"), nil
	}
	if old == "" {
		return fail("old_string is empty: to create or replace a whole file, use write_file"), nil
	}
	if old == repl {
		return fail("old_string and new_string are the same: nothing to change"), nil
	}
	data, r, err := t.read(ctx, p, maxReadBytes)
	if r != nil || err != nil {
		return deref(r), err
	}
	text := string(data)
	switch n := strings.Count(text, old); {
	case n == 0:
		return fail("old_string was not found in %s: read the file again and copy the text exactly, whitespace included, without the line numbers", p), nil
	case n > 1 && !all:
		return fail("old_string matches %d places in %s: give more of the surrounding text so that it matches one, or set replace_all", n, p), nil
	default:
		text = strings.Replace(text, old, repl, map[bool]int{true: -1, false: 1}[all])
		if _, err := t.SB.WriteFile(ctx, t.Root, p, t.modeOf(ctx, p), false, strings.NewReader(text)); err != nil {
			return fileError(p, err)
		}
		return ok(fmt.Sprintf("replaced %d occurrence(s) in %s", map[bool]int{true: n, false: 1}[all], p)), nil
	}
}

// skipDirs are not walked by list_files and the fallback search.
var skipDirs = map[string]bool{".git": true, "node_modules": true}

// walk calls fn for every entry beneath dir (dir relative to Root), depth first in name
// order, not descending into skipDirs. fn returns false to stop.
func (t *Tools) walk(ctx context.Context, dir string, recursive bool, fn func(p string, fi *guestpb.FileInfo) bool) error {
	entries, err := t.SB.List(ctx, t.Root, dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := path.Join(dir, e.GetName())
		if !fn(p, e) {
			return errStop
		}
		if recursive && e.GetType() == "dir" && !skipDirs[e.GetName()] {
			if err := t.walk(ctx, p, true, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

var errStop = errors.New("stop")

func (t *Tools) listFiles(ctx context.Context, dir string, recursive bool) (Result, error) {
	if dir == "" {
		dir = "."
	}
	var b strings.Builder
	n := 0
	err := t.walk(ctx, dir, recursive, func(p string, fi *guestpb.FileInfo) bool {
		if n == maxListEntries {
			return false
		}
		n++
		name := p
		if !recursive {
			name = fi.GetName()
		}
		switch fi.GetType() {
		case "dir":
			name += "/"
		case "symlink":
			name += " -> " + fi.GetLink()
		}
		b.WriteString(name + "\n")
		return true
	})
	if errors.Is(err, errStop) {
		fmt.Fprintf(&b, "[the first %d entries: list a subdirectory for more]\n", maxListEntries)
	} else if err != nil {
		return fileError(dir, err)
	}
	if n == 0 {
		return ok(fmt.Sprintf("(%s is empty)", dir)), nil
	}
	return ok(b.String()), nil
}

func (t *Tools) searchFiles(ctx context.Context, pattern, dir, glob string) (Result, error) {
	if pattern == "" {
		return fail("pattern is empty"), nil
	}
	if dir == "" {
		dir = "."
	}
	// The path is resolved beneath the root as the file tools do it; rg would follow a
	// symlink named on its command line.
	fi, err := t.SB.Stat(ctx, t.Root, dir)
	if err != nil {
		return fileError(dir, err)
	}
	if fi.GetType() == "symlink" {
		return fail("%s is a symlink: search the directory it points to, beneath /workspace", dir), nil
	}
	t.rgOnce.Do(func() {
		code, err := t.SB.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", "command -v rg"}, Dir: "/"})
		t.hasRg = err == nil && code == 0
	})
	if t.hasRg {
		return t.ripgrep(ctx, pattern, dir, glob)
	}
	return t.search(ctx, pattern, dir, glob, fi)
}

// ripgrep searches with rg in the sandbox.
func (t *Tools) ripgrep(ctx context.Context, pattern, dir, glob string) (Result, error) {
	argv := []string{"rg", "--line-number", "--no-heading", "--color", "never", "--max-columns", "400",
		"--max-count", fmt.Sprint(maxMatches), "--glob", "!.git"}
	if glob != "" {
		argv = append(argv, "--glob", glob)
	}
	argv = append(argv, "--regexp", pattern, "--", dir)
	var out, errOut bytes.Buffer
	code, err := t.SB.Exec(ctx, guestclient.ExecOptions{Argv: argv, Dir: t.Root, Stdout: &out, Stderr: &errOut})
	switch {
	case err != nil:
		return Result{}, err
	case code == 1:
		return ok("no matches"), nil
	case code != 0:
		return fail("search failed: %s", strings.TrimSpace(errOut.String())), nil
	}
	return ok(limitLines(out.String(), maxMatches)), nil
}

// limitLines keeps the first n lines of s.
func limitLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n+1 {
		return s
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("[the first %d matching lines: narrow the search for more]\n", n)
}

// search is the search without rg: it walks the tree through the Files service and
// matches each text file's lines with Go's regexp (RE2 syntax).
func (t *Tools) search(ctx context.Context, pattern, dir, glob string, fi *guestpb.FileInfo) (Result, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return fail("pattern is not a valid regular expression: %v", err), nil
	}
	var b strings.Builder
	matches := 0
	var readErr error
	search := func(p string) bool {
		data, r, err := t.read(ctx, p, maxSearchFile)
		if err != nil {
			readErr = err
			return false
		}
		if r != nil || binary(data) {
			return true
		}
		for i, line := range strings.Split(string(data), "\n") {
			if re.MatchString(line) {
				if matches == maxMatches {
					return false
				}
				matches++
				fmt.Fprintf(&b, "%s:%d:%s\n", p, i+1, line[:min(len(line), 400)])
			}
		}
		return true
	}
	if fi.GetType() == "file" {
		search(path.Clean(dir))
	} else {
		err = t.walk(ctx, dir, true, func(p string, fi *guestpb.FileInfo) bool {
			if fi.GetType() != "file" {
				return true
			}
			if glob != "" {
				if m, _ := path.Match(glob, fi.GetName()); !m {
					return true
				}
			}
			return search(strings.TrimPrefix(p, "./"))
		})
		if readErr != nil {
			return Result{}, readErr
		}
		if err != nil && !errors.Is(err, errStop) {
			return fileError(dir, err)
		}
	}
	if matches == 0 {
		return ok("no matches"), nil
	}
	if matches == maxMatches {
		fmt.Fprintf(&b, "[the first %d matching lines: narrow the search for more]\n", maxMatches)
	}
	return ok(b.String()), nil
}
