package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// sseWriter writes Server-Sent Events, flushing each one so that the client
// sees them arrive one by one as from a real model. The first write error
// stops all later writes.
type sseWriter struct {
	w   http.ResponseWriter
	err error
}

// newSSE starts an event stream on w.
func newSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w}
}

// event writes one event named name whose data is v as JSON.
func (s *sseWriter) event(name string, v any) {
	if s.err != nil {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		s.err = fmt.Errorf("encode %s event: %w", name, err)
		return
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		s.err = fmt.Errorf("write %s event: %w", name, err)
		return
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// chunks splits s into pieces of at most n characters, so that streamed text
// arrives in more than one delta as it does from a real model.
func chunks(s string, n int) []string {
	r := []rune(s)
	var out []string
	for len(r) > n {
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	return append(out, string(r))
}
