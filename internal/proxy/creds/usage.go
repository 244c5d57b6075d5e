package creds

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"strings"
	"sync"
)

// Usage is what one answer reported it used, in tokens.
type Usage struct {
	// Input are the input tokens not read from the provider's prompt cache.
	Input      int64
	Output     int64
	CacheRead  int64
	CacheWrite int64
}

// Wire formats the proxy reads usage from: a provider's answers speak one of them.
const (
	WireAnthropic = "anthropic" // the Messages API
	WireOpenAI    = "openai"    // the Responses and Chat Completions APIs
	WireGemini    = "gemini"    // generateContent
)

// Limits on what the proxy keeps of an answer to read its usage: a Server-Sent Event's
// line (longer ones are passed on unread), and a JSON answer (read at its end).
const (
	maxLine = 1 << 20
	maxJSON = 8 << 20
)

// usageReader passes an answer's body on unchanged and reads the usage it reports as
// it goes: each Server-Sent Event's data line as it passes (nothing waits for the rest
// of the stream), or a JSON body at its end. done is called once, at the end of the
// body or when it is closed, whichever comes first.
type usageReader struct {
	body io.ReadCloser
	wire string
	sse  bool
	buf  []byte // a line begun in an earlier read (SSE), or the body so far (JSON)
	skip bool   // the line (or body) is too long to read: passed on unread
	got  Answer
	once sync.Once
	done func(Answer)
}

// Answer is what the proxy learnt from one answer.
type Answer struct {
	Status int
	// Model is the model that answered, as the answer names it.
	Model string
	Usage
	// Reported is true when the answer reported its usage (a stream cut short before its
	// final event, or an error, may not have).
	Reported bool
}

// watchUsage wraps body when its content type is one the proxy reads usage from.
func watchUsage(body io.ReadCloser, wire, contentType string, got Answer, done func(Answer)) io.ReadCloser {
	mt, _, _ := mime.ParseMediaType(contentType)
	u := &usageReader{body: body, wire: wire, got: got, done: done}
	switch {
	case mt == "text/event-stream":
		u.sse = true
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
	default:
		u.skip = true
	}
	return u
}

func (u *usageReader) Read(p []byte) (int, error) {
	n, err := u.body.Read(p)
	if n > 0 && !(u.skip && !u.sse) {
		if u.sse {
			u.feedSSE(p[:n])
		} else if len(u.buf)+n > maxJSON {
			u.skip, u.buf = true, nil
		} else {
			u.buf = append(u.buf, p[:n]...)
		}
	}
	if err == io.EOF {
		u.finish()
	}
	return n, err
}

func (u *usageReader) Close() error {
	u.finish()
	return u.body.Close()
}

func (u *usageReader) finish() {
	u.once.Do(func() {
		if !u.sse && !u.skip && len(u.buf) > 0 {
			u.parse(u.buf)
		}
		u.buf = nil
		u.done(u.got)
	})
}

// feedSSE reads the complete lines in b, keeping a line that b leaves unfinished.
func (u *usageReader) feedSSE(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if !u.skip {
				if len(u.buf)+len(b) > maxLine {
					u.skip, u.buf = true, u.buf[:0]
				} else {
					u.buf = append(u.buf, b...)
				}
			}
			return
		}
		line := b[:i]
		b = b[i+1:]
		if u.skip || len(u.buf) > 0 {
			if !u.skip {
				u.buf = append(u.buf, line...)
				u.line(u.buf)
			}
			u.buf, u.skip = u.buf[:0], false
			continue
		}
		u.line(line)
	}
}

var (
	dataPrefix  = []byte("data:")
	usageMarker = []byte(`"usage`) // "usage" (Anthropic, OpenAI), "usageMetadata" (Gemini)
)

// line reads one line of an event stream: only data lines that mention usage are
// decoded.
func (u *usageReader) line(l []byte) {
	if !bytes.HasPrefix(l, dataPrefix) || !bytes.Contains(l, usageMarker) {
		return
	}
	u.parse(bytes.TrimSpace(l[len(dataPrefix):]))
}

// tokenCounts are the usage fields of every wire format; a field an answer leaves out
// is nil, so that a later event changes only what it says.
type tokenCounts struct {
	// Anthropic
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	// OpenAI: input_tokens and output_tokens (Responses) or these (Chat Completions);
	// the cached tokens are part of the input.
	PromptTokens       *int64 `json:"prompt_tokens"`
	CompletionTokens   *int64 `json:"completion_tokens"`
	InputTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	// Gemini
	PromptTokenCount        *int64 `json:"promptTokenCount"`
	CandidatesTokenCount    *int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      *int64 `json:"thoughtsTokenCount"`
	CachedContentTokenCount *int64 `json:"cachedContentTokenCount"`
}

// reported is one JSON object an answer holds: an event of a stream or a whole answer.
type reported struct {
	Model string       `json:"model"`
	Usage *tokenCounts `json:"usage"`
	// Anthropic's message_start holds the message.
	Message *struct {
		Model string       `json:"model"`
		Usage *tokenCounts `json:"usage"`
	} `json:"message"`
	// OpenAI's response.completed (and .incomplete, .failed) hold the response.
	Response *struct {
		Model string       `json:"model"`
		Usage *tokenCounts `json:"usage"`
	} `json:"response"`
	// Gemini
	ModelVersion  string       `json:"modelVersion"`
	UsageMetadata *tokenCounts `json:"usageMetadata"`
}

// parse reads one JSON value: an object, or (Gemini's unstreamed streamGenerateContent)
// an array of them.
func (u *usageReader) parse(data []byte) {
	if len(data) > 0 && data[0] == '[' {
		var all []reported
		if json.Unmarshal(data, &all) == nil {
			for _, r := range all {
				u.take(r)
			}
		}
		return
	}
	var r reported
	if json.Unmarshal(data, &r) == nil {
		u.take(r)
	}
}

func (u *usageReader) take(r reported) {
	model, c := r.Model, r.Usage
	switch {
	case r.Message != nil:
		model, c = r.Message.Model, r.Message.Usage
	case r.Response != nil:
		model, c = r.Response.Model, r.Response.Usage
	case r.UsageMetadata != nil:
		model, c = r.ModelVersion, r.UsageMetadata
	}
	if model != "" {
		u.got.Model = model
	}
	if c == nil {
		return
	}
	g := &u.got
	g.Reported = true
	set := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	switch u.wire {
	case WireAnthropic:
		// message_start says them all; message_delta says the final (cumulative) output
		// and, on newer APIs, the input again.
		set(&g.Input, c.InputTokens)
		set(&g.Output, c.OutputTokens)
		set(&g.CacheRead, c.CacheReadInputTokens)
		set(&g.CacheWrite, c.CacheCreationInputTokens)
	case WireOpenAI:
		in, cached := c.InputTokens, int64(0)
		if in == nil {
			in = c.PromptTokens
		}
		if d := c.InputTokensDetails; d != nil {
			cached = d.CachedTokens
		} else if d := c.PromptTokensDetails; d != nil {
			cached = d.CachedTokens
		}
		if in != nil {
			g.Input, g.CacheRead = max(*in-cached, 0), cached
		}
		set(&g.Output, c.OutputTokens)
		set(&g.Output, c.CompletionTokens)
	case WireGemini:
		var cached int64
		set(&cached, c.CachedContentTokenCount)
		if c.PromptTokenCount != nil {
			g.Input, g.CacheRead = max(*c.PromptTokenCount-cached, 0), cached
		}
		var out, thoughts int64
		set(&out, c.CandidatesTokenCount)
		set(&thoughts, c.ThoughtsTokenCount)
		g.Output = out + thoughts
	}
}
