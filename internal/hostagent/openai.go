package hostagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// OpenAI is the OpenAI Responses API (and the endpoints compatible with it), streamed,
// through openai-go.
type OpenAI struct {
	// BaseURL is the API's base URL, ending in /v1.
	BaseURL string
	// Key returns the API key for each call.
	Key func(ctx context.Context) (string, error)
	// Model is the model's name.
	Model string
}

// Turn implements Model.
func (o *OpenAI) Turn(ctx context.Context, req TurnRequest, text func(string)) (Message, Usage, error) {
	key, err := o.Key(ctx)
	if err != nil {
		return Message{}, Usage{}, err
	}
	client := openai.NewClient(option.WithAPIKey(key), option.WithBaseURL(o.BaseURL), option.WithMaxRetries(0))
	params := responses.ResponseNewParams{
		Model:           shared.ResponsesModel(o.Model),
		Input:           responses.ResponseNewParamsInputUnion{OfInputItemList: toOpenAI(req.Messages)},
		MaxOutputTokens: openai.Int(req.MaxTokens),
		Store:           openai.Bool(false), // the conversation is paddock's to keep
	}
	if req.System != "" {
		params.Instructions = openai.String(req.System)
	}
	for _, t := range req.Tools {
		required := t.Required
		if required == nil {
			required = []string{}
		}
		params.Tools = append(params.Tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name: t.Name, Description: openai.String(t.Description), Strict: openai.Bool(false),
			Parameters: map[string]any{"type": "object", "properties": t.Properties, "required": required},
		}})
	}
	stream := client.Responses.NewStreaming(ctx, params)
	defer stream.Close()
	var done *responses.Response
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			if text != nil {
				text(ev.Delta)
			}
		case "response.completed":
			r := ev.Response
			done = &r
		case "response.failed", "error":
			return Message{}, Usage{}, &RetryError{Err: fmt.Errorf("the model failed the response: %s", ev.RawJSON())}
		}
	}
	if err := stream.Err(); err != nil {
		return Message{}, Usage{}, classifyOpenAI(ctx, err)
	}
	if done == nil {
		return Message{}, Usage{}, &RetryError{Err: errors.New("the model's answer stream ended before the response did")}
	}
	msg := Message{Role: "assistant"}
	for _, item := range done.Output {
		switch item.Type {
		case "message":
			var b strings.Builder
			for _, c := range item.Content {
				if c.Type == "output_text" {
					b.WriteString(c.Text)
				}
			}
			msg.Content = append(msg.Content, Block{Type: BlockText, Text: b.String()})
		case "function_call":
			args := json.RawMessage(item.Arguments.OfString)
			if !json.Valid(args) {
				args = json.RawMessage("{}")
			}
			msg.Content = append(msg.Content, Block{Type: BlockToolUse, ID: item.CallID, Name: item.Name, Input: args})
		}
	}
	u := done.Usage
	cached := u.InputTokensDetails.CachedTokens
	return msg, Usage{InputTokens: u.InputTokens - cached, OutputTokens: u.OutputTokens, CacheReadTokens: cached}, nil
}

// classifyOpenAI marks the failures worth a retry.
func classifyOpenAI(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		code := apiErr.StatusCode
		if code == http.StatusTooManyRequests || code >= 500 || code == http.StatusRequestTimeout {
			return &RetryError{Err: fmt.Errorf("the model answered %d: %w", code, err), After: retryAfter(apiErr.Response)}
		}
		return fmt.Errorf("the model refused the request (%d): %w", code, err)
	}
	return &RetryError{Err: err}
}

// toOpenAI turns the conversation into Responses input items.
func toOpenAI(conv []Message) []responses.ResponseInputItemUnionParam {
	var out []responses.ResponseInputItemUnionParam
	for _, m := range conv {
		role := responses.EasyInputMessageRoleUser
		if m.Role == "assistant" {
			role = responses.EasyInputMessageRoleAssistant
		}
		for _, b := range m.Content {
			switch b.Type {
			case BlockText:
				if b.Text != "" {
					out = append(out, responses.ResponseInputItemParamOfMessage(b.Text, role))
				}
			case BlockToolUse:
				out = append(out, responses.ResponseInputItemParamOfFunctionCall(string(b.Input), b.ID, b.Name))
			case BlockToolResult:
				text := b.Text
				if b.IsError {
					text = "error: " + text
				}
				item := responses.ResponseInputItemParamOfFunctionCallOutput(text)
				item.OfFunctionCallOutput.CallID = openai.String(b.ToolUseID)
				out = append(out, item)
			}
		}
	}
	return out
}
