package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
)

func (n *Notifier) format() string {
	if f := n.opts.Config.Format; f != "" {
		return f
	}
	return "ntfy"
}

// webhook POSTs msg to the config's webhook in its format.
func (n *Notifier) webhook(ctx context.Context, msg Message) error {
	body, header := webhookBody(n.format(), msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.opts.Config.Webhook, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	for k, v := range n.opts.Config.Headers {
		req.Header.Set(k, os.Expand(v, n.opts.Getenv))
	}
	resp, err := n.opts.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return refusal(resp, text)
}

// webhookBody is the request body and headers of msg in format: ntfy's plain text with
// its Title, Click, Tags and Priority headers (https://docs.ntfy.sh/publish/), a Slack
// incoming webhook's {"text"}, or the message as JSON.
func webhookBody(format string, msg Message) ([]byte, http.Header) {
	h := http.Header{}
	switch format {
	case "slack":
		h.Set("Content-Type", "application/json")
		text := "*" + msg.Title + "*"
		if msg.Body != "" {
			text += "\n" + msg.Body
		}
		if msg.URL != "" {
			text += fmt.Sprintf("\n<%s|Open in paddock>", msg.URL)
		}
		b, _ := json.Marshal(map[string]string{"text": text})
		return b, h
	case "json":
		h.Set("Content-Type", "application/json")
		b, _ := json.Marshal(msg)
		return b, h
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Title", msg.Title)
	if msg.URL != "" {
		h.Set("Click", msg.URL)
	}
	tags := map[string]string{Waiting: "raising_hand", Finished: "white_check_mark", Exited: "stop_sign", Test: "bell"}
	h.Set("Tags", tags[msg.What])
	if msg.What == Waiting {
		h.Set("Priority", "high")
	}
	return []byte(msg.Body), h
}
