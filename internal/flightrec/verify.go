package flightrec

import (
	"github.com/paddockhq/paddock/internal/api/wire"

	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Problem is wire.RecordProblem.
type Problem = wire.RecordProblem

// Report is wire.RecordReport.
type Report = wire.RecordReport

// Read returns a record's entries in order, skipping lines that are not entries.
func Read(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Seq > 0 {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// Verify checks a record read from r against the head the store kept (headSeq 0 and
// an empty headHash when it kept none): that every entry is in its canonical form,
// carries the hash of its content and of the entry before, that seqs run without gaps,
// and that the chain reaches the head. A line that does not parse is a torn write
// (a note) when it is the file's last or the chain runs on unbroken past it; anything
// else is a problem, named by seq and line.
func Verify(r io.Reader, headSeq int64, headHash string) (Report, error) {
	var rep Report
	rep.HeadSeq = headSeq
	br := bufio.NewReader(r)
	prevSeq, prevHash := int64(0), Genesis
	var pendingTorn *Problem
	sawHead := headSeq == 0
	for n := 1; ; n++ {
		raw, err := br.ReadBytes('\n')
		if len(raw) == 0 && err != nil {
			if err != io.EOF {
				return rep, err
			}
			break
		}
		complete := bytes.HasSuffix(raw, []byte{'\n'})
		line := bytes.TrimSuffix(raw, []byte{'\n'})
		if len(line) == 0 {
			continue // the newline that ends a torn line
		}
		var e Entry
		if json.Unmarshal(line, &e) != nil || e.Seq <= 0 {
			p := Problem{Line: n, What: "not an entry: a torn write (the daemon stopped mid-line)"}
			if !complete {
				rep.Notes = append(rep.Notes, p)
				break
			}
			pendingTorn = &p // a problem unless the chain runs on unbroken after it
			continue
		}
		if pendingTorn != nil {
			if e.Prev == prevHash && e.Seq == prevSeq+1 {
				rep.Notes = append(rep.Notes, *pendingTorn)
			} else {
				pendingTorn.What = "not an entry, and the chain breaks there"
				rep.Problems = append(rep.Problems, *pendingTorn)
			}
			pendingTorn = nil
		}
		rep.Entries++
		switch {
		case e.Seq != prevSeq+1 && e.Seq > prevSeq:
			rep.Problems = append(rep.Problems, Problem{Seq: e.Seq, Line: n,
				What: fmt.Sprintf("entries %d to %d are missing (removed)", prevSeq+1, e.Seq-1)})
		case e.Seq <= prevSeq:
			rep.Problems = append(rep.Problems, Problem{Seq: e.Seq, Line: n,
				What: fmt.Sprintf("out of order: comes after entry %d", prevSeq)})
		}
		switch {
		case e.Hash != e.Sum():
			rep.Problems = append(rep.Problems, Problem{Seq: e.Seq, Line: n, What: "changed: its hash does not match its content"})
		case !bytes.Equal(lineOf(e), raw) && complete:
			rep.Problems = append(rep.Problems, Problem{Seq: e.Seq, Line: n, What: "changed: the line is not the entry as written (fields added or reworded)"})
		case e.Prev != prevHash && e.Seq == prevSeq+1:
			rep.Problems = append(rep.Problems, Problem{Seq: e.Seq, Line: n, What: "the entry before it was changed or replaced: prev does not match its hash"})
		}
		if e.Kind == KindGap {
			rep.Problems = append(rep.Problems, Problem{Seq: e.Seq, Line: n,
				What: fmt.Sprintf("the file ended at entry %s when the daemon reopened it, but had reached entry %s: entries were cut off the end", e.Fields["file_seq"], e.Fields["head_seq"])})
		}
		if e.Seq == headSeq {
			sawHead = true
			if headHash != "" && e.Hash != headHash {
				rep.Problems = append(rep.Problems, Problem{Seq: e.Seq, Line: n, What: "is not the entry the store's head names (its hash differs)"})
			}
		}
		if !complete {
			rep.Notes = append(rep.Notes, Problem{Seq: e.Seq, Line: n, What: "the last line has no newline (the daemon stopped mid-write)"})
		}
		prevSeq, prevHash = e.Seq, e.Hash
	}
	if pendingTorn != nil {
		rep.Notes = append(rep.Notes, *pendingTorn)
	}
	rep.LastSeq, rep.LastHash = prevSeq, prevHash
	switch {
	case prevSeq < headSeq:
		rep.Problems = append(rep.Problems, Problem{Seq: prevSeq + 1,
			What: fmt.Sprintf("entries %d to %d are missing from the end (cut off): the store's head is entry %d", prevSeq+1, headSeq, headSeq)})
	case !sawHead:
		rep.Problems = append(rep.Problems, Problem{Seq: headSeq, What: "the store's head entry is not in the record"})
	case prevSeq > headSeq:
		rep.Notes = append(rep.Notes, Problem{What: fmt.Sprintf("entries %d to %d came after the head the store kept (written as the daemon stopped)", headSeq+1, prevSeq)})
	}
	return rep, nil
}

// VerifyFile verifies a sandbox's record against the head heads keeps.
func (r *Recorder) VerifyFile(sandbox string, headSeq int64, headHash string) (Report, error) {
	path := r.Path(sandbox)
	f, err := os.Open(path)
	if err != nil {
		return Report{Sandbox: sandbox, Path: path}, err
	}
	defer f.Close()
	rep, err := Verify(f, headSeq, headHash)
	rep.Sandbox, rep.Path = sandbox, path
	return rep, err
}
