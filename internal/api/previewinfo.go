package api

import (
	"context"
	"net/http"
	"net/http/httptrace"
)

// finalOnly is the transport of a preview: the informational (1xx) answers a sandbox's
// server sends before its final one never reach the browser. httputil.ReverseProxy would
// pass each on as it came, headers and all, where the final answer's filters (its
// cookies, its policy, paddock's own headers) never look: a 103 Early Hints could set
// paddock's cookies on the UI's origin, or Link and Content-Security-Policy of the
// sandbox's choosing, and it cleared the headers paddock had set for the final answer.
// Without them a page loses only the head start Early Hints give; 101 Switching
// Protocols is a final answer, so WebSockets pass.
type finalOnly struct{ http.RoundTripper }

// RoundTrip sends r without the client trace that asks for 1xx answers, which the
// transport then reads and drops (counting their headers against the final answer's limit).
func (t finalOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.RoundTripper.RoundTrip(r.WithContext(untraced{r.Context()}))
}

// untraced is a context whose values hold no httptrace.ClientTrace.
type untraced struct{ context.Context }

func (c untraced) Value(key any) any {
	v := c.Context.Value(key)
	if _, ok := v.(*httptrace.ClientTrace); ok {
		return nil
	}
	return v
}
