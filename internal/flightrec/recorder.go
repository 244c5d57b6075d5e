package flightrec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Heads keeps each record's head (its last seq and hash) apart from the record's file,
// so that entries cut off the file's end are found. The daemon's store implements it.
type Heads interface {
	SetRecordHead(ctx context.Context, sandbox string, seq int64, hash string) error
	RecordHead(ctx context.Context, sandbox string) (seq int64, hash string, ok bool, err error)
}

// DefaultMaxBytes bounds a record's file: past it a last entry says the record is full
// and nothing more is kept for that sandbox name.
const DefaultMaxBytes = 64 << 20

// MaxField bounds each field of an entry: a longer one (an argv of megabytes) is cut
// there and says how long it was, so that every line stays short enough to be found
// again when the record is reopened.
const MaxField = 16 << 10

// maxFolded bounds the destinations whose repeated refusals are counted to be written as
// one entry: a sandbox that asks for a million names twice each does not grow the
// daemon's memory with them; past it a repeat is written as it comes (the file's cap
// holds).
const maxFolded = 4096

// Options configure a Recorder.
type Options struct {
	// Dir holds one file per sandbox name, NAME.jsonl: a directory of the daemon's own
	// state that no sandbox reaches.
	Dir   string
	Heads Heads
	// MaxBytes bounds each file; 0 is DefaultMaxBytes.
	MaxBytes int64
	Logger   *slog.Logger
}

// Recorder appends entries to the records of sandboxes. Add never blocks on the disk:
// each sandbox's entries are written in order by a goroutine of its own, and Close
// writes everything queued before it returns. A nil Recorder records nothing.
type Recorder struct {
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	closed bool
	chains map[string]*chain
	wg     sync.WaitGroup
}

// New makes a Recorder writing under opts.Dir.
func New(opts Options) (*Recorder, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("the flight records' directory: %w", err)
	}
	return &Recorder{opts: opts, log: opts.Logger, chains: map[string]*chain{}}, nil
}

// ValidName says whether a sandbox name can name a record: one plain file name in the
// records' directory, never a path out of it.
func ValidName(sandbox string) bool {
	return sandbox != "" && sandbox[0] != '.' && !strings.ContainsAny(sandbox, "/\\\x00") && len(sandbox) <= 200
}

// Path is where a sandbox's record is kept.
func (r *Recorder) Path(sandbox string) string {
	return filepath.Join(r.opts.Dir, sandbox+".jsonl")
}

// Add queues an entry for a sandbox's record; its seq, prev and hash are set as it is
// written, its time now when zero.
func (r *Recorder) Add(sandbox string, e Entry) {
	if r == nil || !ValidName(sandbox) {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC()
	for k, v := range e.Fields {
		if len(v) > MaxField {
			e.Fields[k] = strings.ToValidUTF8(v[:MaxField], "") + "… (" + strconv.Itoa(len(v)) + " bytes)"
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	c := r.chains[sandbox]
	if c == nil {
		c = &chain{r: r, sandbox: sandbox, wake: make(chan struct{}, 1), folded: map[string]int{}}
		r.chains[sandbox] = c
		r.wg.Add(1)
		go c.run()
	}
	c.mu.Lock()
	c.queue = append(c.queue, e)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Flush returns once every entry added before it is written.
func (r *Recorder) Flush(ctx context.Context) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock() // Close wrote everything
		return nil
	}
	var waits []chan struct{}
	for _, c := range r.chains {
		done := make(chan struct{})
		c.mu.Lock()
		c.flushed = append(c.flushed, done)
		c.mu.Unlock()
		select { // under r.mu: Close cannot have closed wake
		case c.wake <- struct{}{}:
		default:
		}
		waits = append(waits, done)
	}
	r.mu.Unlock()
	for _, done := range waits {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close writes what is queued and stops the writers; later Adds are dropped.
func (r *Recorder) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	for _, c := range r.chains {
		close(c.wake)
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// chain is one sandbox's record being written.
type chain struct {
	r       *Recorder
	sandbox string
	wake    chan struct{}

	mu      sync.Mutex
	queue   []Entry
	flushed []chan struct{}

	// The writer's own state.
	f      *os.File
	seq    int64
	hash   string
	size   int64
	full   bool
	dirty  bool           // entries written since the head was
	folded map[string]int // repeated refusals not written, by destination
}

// HeadEvery is how often at most a record's head is written to the store while entries
// come: a write to the store per entry would cost the exec it records more than the
// entry does. A flush, a removed sandbox and a clean stop write it at once; a daemon that
// dies leaves the file ahead of the head by at most this, which --verify notes.
const HeadEvery = time.Second

func (c *chain) run() {
	defer c.r.wg.Done()
	head := time.NewTimer(HeadEvery)
	head.Stop()
	armed := false
	for {
		select {
		case _, ok := <-c.wake:
			if !ok {
				head.Stop()
				c.drain()
				c.foldedOut()
				c.writeHead()
				if c.f != nil {
					c.f.Close()
				}
				return
			}
			c.drain()
			if c.dirty && !armed {
				head.Reset(HeadEvery)
				armed = true
			}
		case <-head.C:
			armed = false
			c.writeHead()
		}
	}
}

func (c *chain) drain() {
	for {
		c.mu.Lock()
		q, done := c.queue, c.flushed
		c.queue, c.flushed = nil, nil
		c.mu.Unlock()
		if len(q) == 0 && len(done) == 0 {
			return
		}
		c.write(q)
		if len(done) > 0 {
			c.writeHead() // a flush waits for the head too: --verify reads it next
		}
		for _, d := range done {
			close(d)
		}
	}
}

// write appends entries, then moves the head.
func (c *chain) write(q []Entry) {
	if len(q) == 0 {
		return
	}
	if c.f != nil && !c.current() {
		c.f.Close() // the file was replaced or removed on the host: carry on in the one there now
		c.f = nil
	}
	if c.f == nil {
		if err := c.open(); err != nil {
			c.r.log.Error("open a flight record", "sandbox", c.sandbox, "err", err)
			return
		}
	}
	var buf bytes.Buffer
	for _, e := range q {
		if e.Kind == KindNet {
			dest := e.Fields["host"] + ":" + e.Fields["port"]
			if e.Fields["repeat"] == "true" && (c.folded[dest] > 0 || len(c.folded) < maxFolded) {
				c.folded[dest]++
				continue
			}
			if n := c.folded[dest]; n > 0 && e.Fields["allowed"] == "false" {
				e.Fields["folded_before"] = strconv.Itoa(n)
				delete(c.folded, dest)
			}
		}
		c.append(&buf, e)
	}
	if buf.Len() == 0 {
		return
	}
	n, err := c.f.Write(buf.Bytes())
	c.size += int64(n)
	if err != nil {
		c.r.log.Error("write a flight record", "sandbox", c.sandbox, "err", err)
		return
	}
	c.dirty = true
	if last := q[len(q)-1]; last.Kind == KindSandbox && last.Fields["event"] == "removed" {
		c.foldedOut()
		c.writeHead()
		c.f.Close() // the sandbox is gone: its record keeps no descriptor open until a new one of its name
		c.f = nil
	}
}

// append chains an entry into buf, or the record-full entry when it would pass the cap.
func (c *chain) append(buf *bytes.Buffer, e Entry) {
	if c.full {
		return
	}
	e.Seq, e.Prev = c.seq+1, c.hash
	e.Hash = e.Sum()
	line := lineOf(e)
	if c.size+int64(buf.Len()+len(line)) > c.r.opts.MaxBytes-1024 {
		c.full = true
		e = Entry{Seq: c.seq + 1, Time: e.Time, Kind: KindFull, Prev: c.hash,
			Fields: map[string]string{"max_bytes": strconv.FormatInt(c.r.opts.MaxBytes, 10)}}
		e.Hash = e.Sum()
		line = lineOf(e)
	}
	buf.Write(line)
	c.seq, c.hash = e.Seq, e.Hash
}

// foldedOut writes, as the record closes, the refusals folded since their last entry.
func (c *chain) foldedOut() {
	if len(c.folded) == 0 || c.f == nil {
		return
	}
	var buf bytes.Buffer
	for dest, n := range c.folded {
		c.append(&buf, Entry{Time: time.Now().UTC(), Kind: KindNet,
			Fields: map[string]string{"destination": dest, "allowed": "false", "folded": strconv.Itoa(n)}})
	}
	clear(c.folded)
	n, err := c.f.Write(buf.Bytes())
	c.size += int64(n)
	c.dirty = true
	if err != nil {
		c.r.log.Error("write a flight record", "sandbox", c.sandbox, "err", err)
	}
}

func (c *chain) writeHead() {
	if c.r.opts.Heads == nil || c.seq == 0 || !c.dirty {
		return
	}
	c.dirty = false
	if err := c.r.opts.Heads.SetRecordHead(context.Background(), c.sandbox, c.seq, c.hash); err != nil {
		c.r.log.Error("keep a flight record's head", "sandbox", c.sandbox, "err", err)
	}
}

// current says the open file is still the one at the record's path.
func (c *chain) current() bool {
	fi, err := c.f.Stat()
	if err != nil {
		return false
	}
	at, err := os.Stat(c.r.Path(c.sandbox))
	return err == nil && os.SameFile(fi, at)
}

// open opens the sandbox's file for appending and continues its chain from its last
// complete line; a torn last line (the daemon stopped mid-write) is ended so that the
// next entry starts a line of its own. A file that ends before the head the store
// kept gets a record-gap entry saying so.
func (c *chain) open() error {
	f, err := os.OpenFile(c.r.Path(c.sandbox), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	last, size, torn, err := tail(f)
	if err != nil {
		f.Close()
		return err
	}
	if torn {
		if _, err := f.Write([]byte{'\n'}); err != nil {
			f.Close()
			return err
		}
		size++
	}
	c.f, c.size = f, size
	c.seq, c.hash = 0, Genesis
	if last != nil {
		c.seq, c.hash = last.Seq, last.Hash
		c.full = last.Kind == KindFull
	}
	if c.r.opts.Heads != nil {
		seq, hash, ok, err := c.r.opts.Heads.RecordHead(context.Background(), c.sandbox)
		if err == nil && ok && (seq > c.seq || seq == c.seq && hash != c.hash) {
			var buf bytes.Buffer
			c.append(&buf, Entry{Time: time.Now().UTC(), Kind: KindGap, Fields: map[string]string{
				"head_seq": strconv.FormatInt(seq, 10), "head_hash": hash, "file_seq": strconv.FormatInt(c.seq, 10)}})
			if _, err := f.Write(buf.Bytes()); err != nil {
				return err
			}
			c.size += int64(buf.Len())
			c.dirty = true
		}
	}
	return nil
}

// tail reads the last complete entry of a record file, its size, and whether it ends
// in a torn line.
func tail(f *os.File) (*Entry, int64, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, false, err
	}
	size := fi.Size()
	if size == 0 {
		return nil, 0, false, nil
	}
	const window = 1 << 20
	off := max(0, size-window)
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, false, err
	}
	torn := buf[len(buf)-1] != '\n'
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte{'\n'})
	for i := len(lines) - 1; i >= 0; i-- {
		var e Entry
		if json.Unmarshal(lines[i], &e) == nil && e.Seq > 0 && e.Hash != "" {
			return &e, size, torn, nil
		}
	}
	return nil, size, torn, nil
}
