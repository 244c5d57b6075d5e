package flightrec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// memHeads keeps heads in memory, as the store does in its table.
type memHeads struct {
	mu   sync.Mutex
	seq  map[string]int64
	hash map[string]string
}

func (h *memHeads) SetRecordHead(_ context.Context, sb string, seq int64, hash string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq[sb], h.hash[sb] = seq, hash
	return nil
}

func (h *memHeads) RecordHead(_ context.Context, sb string) (int64, string, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.seq[sb]
	return s, h.hash[sb], ok, nil
}

func newRecorder(t *testing.T, dir string, heads *memHeads) *Recorder {
	t.Helper()
	r, err := New(Options{Dir: dir, Heads: heads})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// record writes five entries of sandbox "sb" and returns the file's lines.
func record(t *testing.T) (string, *memHeads, [][]byte) {
	dir := t.TempDir()
	heads := &memHeads{seq: map[string]int64{}, hash: map[string]string{}}
	r := newRecorder(t, dir, heads)
	r.Add("sb", Entry{Kind: KindExec, Who: "local", Fields: map[string]string{"argv": `["git","status"]`, "exit": "0"}})
	r.Add("sb", Entry{Kind: KindNet, Fields: map[string]string{"host": "evil.example", "port": "443", "allowed": "false"}})
	for range 3 {
		r.Add("sb", Entry{Kind: KindNet, Fields: map[string]string{"host": "evil.example", "port": "443", "allowed": "false", "repeat": "true"}})
	}
	r.Add("sb", Entry{Kind: KindCredential, Session: "main", Fields: map[string]string{"model": "claude-x", "output_tokens": "12"}})
	r.Add("sb", Entry{Kind: KindCopyOut, Who: "local", Fields: map[string]string{"path": "/w/a.txt", "bytes": "5"}})
	r.Add("sb", Entry{Kind: KindSnapshot, Fields: map[string]string{"id": "s1"}})
	r.Close()
	b, err := os.ReadFile(r.Path("sb"))
	if err != nil {
		t.Fatal(err)
	}
	return r.Path("sb"), heads, bytes.SplitAfter(b, []byte{'\n'})
}

func verifyLines(t *testing.T, heads *memHeads, lines [][]byte) Report {
	t.Helper()
	rep, err := Verify(bytes.NewReader(bytes.Join(lines, nil)), heads.seq["sb"], heads.hash["sb"])
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestChainVerifiesAndFoldsRepeats(t *testing.T) {
	path, heads, lines := record(t)
	rep := verifyLines(t, heads, lines)
	if !rep.OK() || len(rep.Notes) != 0 {
		t.Fatalf("an untouched record: %+v", rep)
	}
	es, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	// The three repeats fold into one entry written as the record closes.
	if len(es) != 6 || es[5].Fields["folded"] != "3" || heads.seq["sb"] != 6 {
		t.Fatalf("entries %+v, head %d", es, heads.seq["sb"])
	}
}

func TestVerifyNamesWhatWasDone(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func([][]byte) [][]byte
		want string
	}{
		{"a field changed", func(l [][]byte) [][]byte {
			l[1] = bytes.Replace(l[1], []byte("evil.example"), []byte("good.example"), 1)
			return l
		}, "entry 2 (line 2): changed: its hash does not match"},
		{"a field changed, hash recomputed", func(l [][]byte) [][]byte {
			e := mustParse(t, l[1])
			e.Fields["allowed"] = "true"
			e.Hash = e.Sum()
			l[1] = lineOf(e)
			return l
		}, "entry 3 (line 3): the entry before it was changed"},
		{"a middle entry removed", func(l [][]byte) [][]byte {
			return append(l[:2:2], l[3:]...)
		}, "entry 4 (line 3): entries 3 to 3 are missing (removed)"},
		{"the tail cut off", func(l [][]byte) [][]byte {
			return l[:4]
		}, "entries 5 to 6 are missing from the end (cut off)"},
		{"a field added", func(l [][]byte) [][]byte {
			l[0] = bytes.Replace(l[0], []byte(`{"seq":1,`), []byte(`{"seq":1,"note":"x",`), 1)
			return l
		}, "entry 1 (line 1): changed: the line is not the entry as written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, heads, lines := record(t)
			rep := verifyLines(t, heads, tc.edit(lines))
			if rep.OK() {
				t.Fatalf("not found: %+v", rep)
			}
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.String())
			}
			if !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Fatalf("problems:\n%s\nwant %q", strings.Join(got, "\n"), tc.want)
			}
		})
	}
}

// A daemon that dies mid-line leaves a torn last line: --verify calls it that, not
// tampering, and the next write starts a new line that continues the chain.
func TestTornLastLine(t *testing.T) {
	path, heads, lines := record(t)
	last := lines[len(lines)-2] // the last line is the empty remainder after the final newline
	torn := append(bytes.Join(lines[:len(lines)-2], nil), last[:len(last)/2]...)
	heads.seq["sb"], heads.hash["sb"] = 5, mustParse(t, lines[4]).Hash // the head moves after the write
	rep, err := Verify(bytes.NewReader(torn), 5, heads.hash["sb"])
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0].What, "torn write") {
		t.Fatalf("a torn last line: %+v", rep)
	}
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	r := newRecorder(t, strings.TrimSuffix(path, "/sb.jsonl"), heads)
	r.Add("sb", Entry{Kind: KindExec, Fields: map[string]string{"argv": `["true"]`}})
	r.Close()
	rep, err = r.VerifyFile("sb", heads.seq["sb"], heads.hash["sb"])
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.LastSeq != 6 || len(rep.Notes) != 1 {
		t.Fatalf("written after a torn line: %+v", rep)
	}
}

// A record cut while the daemon was down gets a record-gap entry when reopened, which
// --verify reports even though the chain after it is whole.
func TestCutWhileDownIsKept(t *testing.T) {
	path, heads, lines := record(t)
	if err := os.WriteFile(path, bytes.Join(lines[:3], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newRecorder(t, strings.TrimSuffix(path, "/sb.jsonl"), heads)
	r.Add("sb", Entry{Kind: KindExec, Fields: map[string]string{"argv": `["true"]`}})
	r.Close()
	rep, err := r.VerifyFile("sb", heads.seq["sb"], heads.hash["sb"])
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || !strings.Contains(rep.Problems[0].What, "entries were cut off the end") {
		t.Fatalf("a cut found on reopening: %+v", rep)
	}
}

func TestRecordFull(t *testing.T) {
	dir := t.TempDir()
	r, err := New(Options{Dir: dir, MaxBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		r.Add("sb", Entry{Kind: KindExec, Fields: map[string]string{"argv": strings.Repeat("x", 100)}})
		r.Flush(context.Background()) // a batch each: the cap holds across batches
	}
	r.Close()
	es, err := Read(r.Path("sb"))
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(r.Path("sb"))
	if es[len(es)-1].Kind != KindFull || fi.Size() > 4096 {
		t.Fatalf("%d entries, the last %q, %d bytes", len(es), es[len(es)-1].Kind, fi.Size())
	}
}

// Repeated refusals of ever new names are folded for at most maxFolded destinations:
// the daemon's memory does not grow with what a sandbox asks for.
func TestFoldedBounded(t *testing.T) {
	r := newRecorder(t, t.TempDir(), &memHeads{seq: map[string]int64{}, hash: map[string]string{}})
	defer r.Close()
	for i := range maxFolded + 500 {
		r.Add("sb", Entry{Kind: KindNet, Fields: map[string]string{"host": fmt.Sprintf("h%d.example", i), "port": "443", "allowed": "false", "repeat": "true"}})
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	n := len(r.chains["sb"].folded)
	r.mu.Unlock()
	if n > maxFolded {
		t.Fatalf("%d destinations folded in memory, want at most %d", n, maxFolded)
	}
}

func mustParse(t *testing.T, line []byte) Entry {
	t.Helper()
	var e Entry
	if err := json.Unmarshal(line, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// A name that is a path is no record's: nothing is written or read outside the directory.
func TestNamesArePlainFiles(t *testing.T) {
	for _, n := range []string{"", ".", "..", "../x", "a/b", ".hidden", "a\\b", "a\x00b"} {
		if ValidName(n) {
			t.Errorf("ValidName(%q) = true", n)
		}
	}
	if !ValidName("repo-1") {
		t.Error("a sandbox name refused")
	}
}

// An entry with a field of megabytes is cut to MaxField, so the record's last entry is
// still found when it is reopened, and the chain goes on; Flush after Close returns.
func TestLongFieldKeepsTheChain(t *testing.T) {
	dir := t.TempDir()
	heads := &memHeads{seq: map[string]int64{}, hash: map[string]string{}}
	r := newRecorder(t, dir, heads)
	r.Add("sb", Entry{Kind: KindExec, Fields: map[string]string{"argv": strings.Repeat("a", 3<<20)}})
	r.Close()
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = newRecorder(t, dir, heads)
	r.Add("sb", Entry{Kind: KindExec, Fields: map[string]string{"argv": `["true"]`}})
	r.Close()
	rep, err := r.VerifyFile("sb", heads.seq["sb"], heads.hash["sb"])
	if err != nil {
		t.Fatal(err)
	}
	es, _ := Read(r.Path("sb"))
	if !rep.OK() || rep.LastSeq != 2 || !strings.HasSuffix(es[0].Fields["argv"], "… (3145728 bytes)") {
		t.Fatalf("%+v", rep)
	}
}
