package hostagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
	"github.com/paddockhq/paddock/internal/modeltest"
)

// newSandbox starts a guest in-process and returns tools working beneath a fresh root
// directory (in place of /workspace), and that directory.
func newSandbox(tb testing.TB) (*Tools, string) {
	tb.Helper()
	c, _ := guesttest.Connect(tb)
	root := filepath.Join(tb.TempDir(), "workspace")
	if err := os.Mkdir(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	return &Tools{SB: c, Root: root}, root
}

// recorder keeps what a loop reports.
type recorder struct {
	mu      sync.Mutex
	text    strings.Builder
	retries []error
	tools   []toolEnd
	output  strings.Builder
	saved   []Message
	started chan Block
}

type toolEnd struct {
	call Block
	r    Result
}

func newRecorder() *recorder { return &recorder{started: make(chan Block, 100)} }

func (r *recorder) Text(s string) { r.mu.Lock(); r.text.WriteString(s); r.mu.Unlock() }
func (r *recorder) Retry(err error, _ time.Duration, _ int) {
	r.mu.Lock()
	r.retries = append(r.retries, err)
	r.mu.Unlock()
}
func (r *recorder) Turn(Message, Usage, time.Duration) {}
func (r *recorder) ToolStart(call Block)               { r.started <- call }
func (r *recorder) Output(_ Block, chunk string) {
	r.mu.Lock()
	r.output.WriteString(chunk)
	r.mu.Unlock()
}
func (r *recorder) ToolEnd(call Block, res Result, _ time.Duration) {
	r.mu.Lock()
	r.tools = append(r.tools, toolEnd{call, res})
	r.mu.Unlock()
}
func (r *recorder) Save(conv []Message) {
	r.mu.Lock()
	r.saved = append([]Message(nil), conv...)
	r.mu.Unlock()
}

// newLoop returns a loop on a scripted Anthropic server, with tools on a fresh root.
func newLoop(t *testing.T) (*Loop, *modeltest.Anthropic, *recorder, string) {
	t.Helper()
	srv := modeltest.NewAnthropic(t)
	tools, root := newSandbox(t)
	rec := newRecorder()
	l := &Loop{
		Model: &Anthropic{BaseURL: srv.URL(), Model: "claude-test",
			Key: func(context.Context) (string, error) { return "sk-real-key", nil }},
		Tools: tools, System: SystemPrompt, Events: rec,
		Retry: Retry{Attempts: 4, Base: 10 * time.Millisecond, Max: 50 * time.Millisecond},
	}
	return l, srv, rec, root
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
