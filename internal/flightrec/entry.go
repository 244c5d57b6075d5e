// Package flightrec is each sandbox's flight recorder: an append-only, hash-chained
// record, kept on the host, of what was done in and for the sandbox (the processes run
// in it, its network requests decided, its model calls, every sync, merge, copy out and
// snapshot). Each entry carries the hash of the one before it, so a changed, removed
// or reordered entry breaks the chain where it was made, and the chain's head kept
// apart (in the daemon's store) shows entries cut off the end.
package flightrec

import (
	"github.com/paddockhq/paddock/internal/api/wire"

	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Entry kinds: what was done.
const (
	KindExec       = "exec"        // a process the daemon ran in the sandbox for a client
	KindNet        = "net"         // a request the egress proxy decided
	KindCredential = "credential"  // a model call through the credential proxy
	KindSync       = "sync"        // refs (and files) brought out of the sandbox
	KindMerge      = "merge"       // the sandbox's branch merged into the user's
	KindCopyOut    = "copy-out"    // a file or tree copied out of the sandbox
	KindSnapshot   = "snapshot"    // a snapshot taken
	KindSession    = "session"     // a session started, exited, restarted or removed
	KindSandbox    = "sandbox"     // the sandbox created, started, stopped, removed
	KindFull       = "record-full" // the record reached its size cap: nothing after it is kept
	KindGap        = "record-gap"  // the file ended before the head the store kept, when reopened
)

// Entry is wire.RecordEntry.
type Entry = wire.RecordEntry

// Genesis is the Prev of a record's first entry.
var Genesis = hex.EncodeToString(make([]byte, sha256.Size))

// lineOf is the entry as a line of the file: its canonical JSON with the hash.
func lineOf(e Entry) []byte {
	b, _ := json.Marshal(e)
	return append(b, '\n')
}

type whoKey struct{}

// WithWho marks ctx as a request of who (a login, "token NAME", "local"...), so that
// what is recorded under it says who asked.
func WithWho(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, whoKey{}, who)
}

// Who is who ctx's request came from (WithWho), or empty.
func Who(ctx context.Context) string {
	s, _ := ctx.Value(whoKey{}).(string)
	return s
}
