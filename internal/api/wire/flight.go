package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// MergeNote is what `paddock merge` merged into the user's checkout, on the host, for
// the sandbox's flight record (POST /v1/sandboxes/{name}/merges).
type MergeNote struct {
	Branch      string   `json:"branch"`
	Ref         string   `json:"ref"`
	Into        string   `json:"into"`
	Head        string   `json:"head"`
	New         string   `json:"new"`
	Commits     []string `json:"commits"`
	Files       int      `json:"files"`
	FastForward bool     `json:"fast_forward"`
}

// RecordEntry is one line of a record.
type RecordEntry struct {
	// Seq numbers the record's entries from 1, without gaps.
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	// Session is the session the action belongs to, when it belongs to one.
	Session string `json:"session,omitempty"`
	// Who asked for it: a GitHub login, "token NAME", "browser", "local"; empty for what
	// the sandbox did itself (its requests, its model calls) or the daemon on its own.
	Who string `json:"who,omitempty"`
	// Fields say what was done (argv, host, model, refs, paths, bytes...).
	Fields map[string]string `json:"fields,omitempty"`
	// Prev is the hash of the entry before (64 zeros for the first); Hash is SHA-256
	// over Prev and the entry's canonical encoding (this struct as JSON without Hash).
	Prev string `json:"prev"`
	Hash string `json:"hash,omitempty"`
}

// Sum is the hash the entry should carry.
func (e RecordEntry) Sum() string {
	h := sha256.New()
	h.Write([]byte(e.Prev))
	h.Write([]byte{'\n'})
	h.Write(e.canonical())
	return hex.EncodeToString(h.Sum(nil))
}

// canonical is the entry's encoding without its hash: JSON of the struct, whose field
// order is fixed and whose map keys encoding/json sorts.
func (e RecordEntry) canonical() []byte {
	e.Hash = ""
	b, _ := json.Marshal(e)
	return b
}

// RecordProblem is something wrong found in a record: an entry changed, missing, out of
// place or cut off. Seq names the entry concerned (0: the record as a whole); Line is
// the line of the file, from 1.
type RecordProblem struct {
	Seq  int64  `json:"seq,omitempty"`
	Line int    `json:"line,omitempty"`
	What string `json:"what"`
}

// RecordReport is what Verify found in one record.
type RecordReport struct {
	Sandbox string `json:"sandbox"`
	Path    string `json:"path"`
	Entries int64  `json:"entries"`
	// LastSeq and LastHash end the chain as read; HeadSeq is the head the store kept.
	LastSeq  int64  `json:"last_seq"`
	LastHash string `json:"last_hash,omitempty"`
	HeadSeq  int64  `json:"head_seq"`
	// Problems make the record fail; Notes do not (a line torn when the daemon stopped
	// mid-write, entries written after the last head the store kept).
	Problems []RecordProblem `json:"problems,omitempty"`
	Notes    []RecordProblem `json:"notes,omitempty"`
}

// OK says the record verified.
func (r RecordReport) OK() bool { return len(r.Problems) == 0 }

func (p RecordProblem) String() string {
	switch {
	case p.Seq > 0:
		return fmt.Sprintf("entry %d (line %d): %s", p.Seq, p.Line, p.What)
	case p.Line > 0:
		return fmt.Sprintf("line %d: %s", p.Line, p.What)
	}
	return p.What
}
