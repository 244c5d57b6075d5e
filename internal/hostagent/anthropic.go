package hostagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/paddockhq/paddock/internal/transcript"
)

// Usage is what one model turn cost, in tokens, as transcripts count it (the uncached
// input apart from what was read from and written to the cache).
type Usage = transcript.Usage

// TurnRequest is one model call.
type TurnRequest struct {
	System    string
	Tools     []ToolDef
	Messages  []Message
	MaxTokens int64
}

// Model makes the assistant's next message.
type Model interface {
	// Turn sends the conversation and returns the assistant's message, passing its text
	// to text as it streams. A failure worth trying again is a *RetryError.
	Turn(ctx context.Context, req TurnRequest, text func(string)) (Message, Usage, error)
}

// RetryError is a model call that failed in a way that may pass if tried again: rate
// limited (429), overloaded (529), a server error (5xx), a connection or stream cut short.
type RetryError struct {
	Err error
	// After is how long the server asked to wait (Retry-After), zero when it did not say.
	After time.Duration
}

func (e *RetryError) Error() string { return e.Err.Error() }
func (e *RetryError) Unwrap() error { return e.Err }

// Anthropic is the Messages API, streamed, through anthropic-sdk-go.
type Anthropic struct {
	// BaseURL is the API's base URL (https://api.anthropic.com, or the one configured).
	BaseURL string
	// Key returns the API key for each call, so that a key_command's rotation is followed.
	Key func(ctx context.Context) (string, error)
	// Model is the model's name.
	Model string
	// HTTPClient, when set, makes the requests.
	HTTPClient *http.Client
}

// Turn implements Model.
func (a *Anthropic) Turn(ctx context.Context, req TurnRequest, text func(string)) (Message, Usage, error) {
	key, err := a.Key(ctx)
	if err != nil {
		return Message{}, Usage{}, err
	}
	opts := []option.RequestOption{option.WithAPIKey(key), option.WithBaseURL(a.BaseURL),
		option.WithMaxRetries(0)} // the loop retries, and says so
	if a.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(a.HTTPClient))
	}
	client := anthropic.NewClient(opts...)
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(a.Model),
		MaxTokens: req.MaxTokens,
		Messages:  toParams(req.Messages),
		// Automatic prompt caching: each turn reads the conversation so far from the cache.
		CacheControl: anthropic.NewCacheControlEphemeralParam(),
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: t.Name, Description: anthropic.String(t.Description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: t.Properties, Required: t.Required},
		}})
	}
	stream := client.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	var acc anthropic.Message
	for stream.Next() {
		ev := stream.Current()
		if err := acc.Accumulate(ev); err != nil {
			return Message{}, Usage{}, &RetryError{Err: fmt.Errorf("the model's answer was garbled: %w", err)}
		}
		if d, ok := ev.AsAny().(anthropic.ContentBlockDeltaEvent); ok && text != nil {
			if t, ok := d.Delta.AsAny().(anthropic.TextDelta); ok {
				text(t.Text)
			}
		}
	}
	if err := stream.Err(); err != nil {
		return Message{}, Usage{}, classify(ctx, err)
	}
	if acc.StopReason == "" {
		return Message{}, Usage{}, &RetryError{Err: errors.New("the model's answer stream ended before the message did")}
	}
	msg := Message{Role: "assistant"}
	for _, b := range acc.Content {
		switch b.Type {
		case "text":
			msg.Content = append(msg.Content, Block{Type: BlockText, Text: b.Text})
		case "tool_use":
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			msg.Content = append(msg.Content, Block{Type: BlockToolUse, ID: b.ID, Name: b.Name, Input: input})
		}
	}
	u := acc.Usage
	return msg, Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadInputTokens,
		CacheWriteTokens: u.CacheCreationInputTokens}, nil
}

// classify marks the failures worth a retry.
func classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		code := apiErr.StatusCode
		if code == http.StatusTooManyRequests || code == 529 || code >= 500 || code == http.StatusRequestTimeout {
			return &RetryError{Err: fmt.Errorf("the model answered %d: %w", code, err), After: retryAfter(apiErr.Response)}
		}
		return fmt.Errorf("the model refused the request (%d): %w", code, err)
	}
	return &RetryError{Err: err} // the connection or the stream broke
}

// retryAfter reads the server's Retry-After-Ms or Retry-After.
func retryAfter(r *http.Response) time.Duration {
	if r == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(r.Header.Get("Retry-After-Ms"), 64); err == nil && ms >= 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	if s, err := strconv.ParseFloat(r.Header.Get("Retry-After"), 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	return 0
}

// toParams turns the conversation into the SDK's messages.
func toParams(conv []Message) []anthropic.MessageParam {
	out := make([]anthropic.MessageParam, 0, len(conv))
	for _, m := range conv {
		var blocks []anthropic.ContentBlockParamUnion
		for _, b := range m.Content {
			switch b.Type {
			case BlockText:
				if b.Text != "" {
					blocks = append(blocks, anthropic.NewTextBlock(b.Text))
				}
			case BlockToolUse:
				blocks = append(blocks, anthropic.NewToolUseBlock(b.ID, b.Input, b.Name))
			case BlockToolResult:
				blocks = append(blocks, anthropic.NewToolResultBlock(b.ToolUseID, b.Text, b.IsError))
			}
		}
		role := anthropic.MessageParamRoleUser
		if m.Role == "assistant" {
			role = anthropic.MessageParamRoleAssistant
		}
		out = append(out, anthropic.MessageParam{Role: role, Content: blocks})
	}
	return out
}
