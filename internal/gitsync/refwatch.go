package gitsync

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/termtext"
)

// refWatch is upload-pack's output on its way to host git. It holds back the listing of
// the refs (protocol v2's answer to ls-refs; in v0 and v1 the advertisement) until the
// listing is whole, hands it to seen, and passes it on only if seen accepts it: a refusal
// cuts the stream before git has a ref to write. After the listing it passes everything
// through. Writes come from one goroutine.
type refWatch struct {
	w    io.Writer
	seen func(refs map[string]string) error
	// cut is called once when the stream is cut (by seen, output that is not the pack
	// protocol, or more than room), to end it on both sides.
	cut func()
	// room, when above 0, is the most that may pass on to git: the pack is written into
	// the host repository, and a sandbox could commit more than the host's disk holds.
	room   int64
	passed int64

	state     watchState
	begun, v2 bool   // the first pkt-line was read; it said protocol v2
	held      []byte // received, not yet passed on
	parsed    int    // how much of held is whole pkt-lines already read
	refs      map[string]string
	err       error
}

// The most of a listing a refWatch holds back. upload-pack in the sandbox is the
// sandbox's program: it can send lines forever, and all of them would be held. A real
// listing is a line of about 60 to 100 bytes per ref, so a million refs (far more than
// any repository has branches) fit in maxListing; the ref count bounds the map, whose
// entries cost more than their lines when the lines are short.
const (
	maxListing = 64 << 20
	maxRefs    = 1_000_000
)

// watchState is where a refWatch is in upload-pack's output.
type watchState int

const (
	watchFirst   watchState = iota // the first section: v2's capabilities, or v0's refs
	watchListing                   // v2: the answer to ls-refs
	watchPassing                   // the listing went through
	watchCut                       // the listing was refused
)

func (r *refWatch) Write(p []byte) (int, error) {
	switch r.state {
	case watchPassing:
		if r.room > 0 && r.passed+int64(len(p)) > r.room {
			return 0, r.stop(&NoRoomError{Room: r.room})
		}
		r.passed += int64(len(p))
		return r.w.Write(p)
	case watchCut:
		return 0, r.err
	}
	if len(r.held)+len(p) > maxListing {
		return 0, r.stop(fmt.Errorf("git upload-pack in the sandbox sent a listing of refs over %d MiB", maxListing>>20))
	}
	r.held = append(r.held, p...)
	for r.state == watchFirst || r.state == watchListing {
		line, flush, n, ok := pktLine(r.held[r.parsed:])
		if !ok {
			break
		}
		if n < 0 {
			return 0, r.stop(errors.New("git upload-pack in the sandbox sent something other than the pack protocol"))
		}
		r.parsed += n
		if !r.begun {
			r.begun = true
			if line == "version 2" {
				r.v2 = true // capabilities follow; the listing comes when git asks for it
				continue
			}
			if line == "version 1" {
				continue // v0's advertisement follows
			}
		}
		switch {
		case !flush && r.state == watchFirst && r.v2:
			continue // a capability
		case !flush:
			r.addRef(line)
			if len(r.refs) > maxRefs {
				return 0, r.stop(fmt.Errorf("git upload-pack in the sandbox listed over %d refs", maxRefs))
			}
			continue
		case r.state == watchFirst && r.v2:
			// The capabilities are whole: git needs them to ask for the listing.
			if err := r.pass(); err != nil {
				return 0, err
			}
			r.state = watchListing
			continue
		}
		if err := r.seen(r.refs); err != nil {
			return 0, r.stop(err)
		}
		r.state = watchPassing
		if err := r.pass(); err != nil {
			return 0, err
		}
		if rest := r.held; len(rest) > 0 {
			r.held = nil
			if _, err := r.Write(rest); err != nil {
				return 0, err
			}
		}
	}
	return len(p), nil
}

// pass writes the parsed part of held on to git.
func (r *refWatch) pass() error {
	r.passed += int64(r.parsed)
	_, err := r.w.Write(r.held[:r.parsed])
	r.held = append(r.held[:0], r.held[r.parsed:]...)
	r.parsed = 0
	return err
}

// addRef records a listing line: "OID NAME[ attributes]" (v0's first line has its
// capabilities after a NUL; its peeled tags end in ^{}).
func (r *refWatch) addRef(line string) {
	line, _, _ = strings.Cut(line, "\x00")
	f := strings.Fields(line)
	if len(f) < 2 || strings.HasSuffix(f[1], "^{}") {
		return
	}
	if r.refs == nil {
		r.refs = map[string]string{}
	}
	r.refs[f[1]] = f[0]
}

// NoRoomError is a sync stopped before the sandbox's work filled the host's disk.
type NoRoomError struct {
	// Room is what the fetch could still write (hostdisk.Room).
	Room int64
}

func (e *NoRoomError) Error() string {
	return fmt.Sprintf("the sandbox's work is more than the %s the host's disk can still take (a twentieth of its free space, at most 1 GiB, stays free): the fetch was stopped and no ref was written",
		termtext.Size(e.Room))
}

// stop cuts the stream with err.
func (r *refWatch) stop(err error) error {
	r.state, r.err, r.held, r.refs = watchCut, err, nil, nil
	r.cut()
	return err
}

// pktLine reads one pkt-line from b: its payload without the newline, whether it is a
// flush (or v2's delimiter or end of response), and its length; ok is false when b does
// not hold a whole one yet, n is -1 when b is not a pkt-line.
func pktLine(b []byte) (line string, flush bool, n int, ok bool) {
	if len(b) < 4 {
		return "", false, 0, false
	}
	size, err := strconv.ParseUint(string(b[:4]), 16, 16)
	switch {
	case err != nil || size == 3:
		return "", false, -1, true
	case size < 4:
		return "", true, 4, true
	case len(b) < int(size):
		return "", false, 0, false
	}
	return strings.TrimSuffix(string(b[4:size]), "\n"), false, int(size), true
}
