package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/SherClockHolmes/webpush-go"

	"github.com/paddockhq/paddock/internal/store"
)

// vapidKeys are the daemon's VAPID key pair (RFC 8292), base64url: the public key is the
// uncompressed P-256 point browsers subscribe with, the private key its scalar.
type vapidKeys struct {
	Public  string `json:"public_key"`
	Private string `json:"private_key"`
}

// loadVAPID reads the key pair from dir/vapid.json, making it the first time. The file
// is the user's alone: with the private key anyone could push to the subscribed browsers.
func loadVAPID(dir string) (vapidKeys, error) {
	path := filepath.Join(dir, "vapid.json")
	var k vapidKeys
	data, err := os.ReadFile(path)
	if err == nil {
		if err := json.Unmarshal(data, &k); err != nil || k.Public == "" || k.Private == "" {
			return k, fmt.Errorf("%s is not a VAPID key pair (remove it to make a new one; browsers then subscribe again): %v", path, err)
		}
		return k, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return k, err
	}
	k.Private, k.Public, err = webpush.GenerateVAPIDKeys()
	if err != nil {
		return k, fmt.Errorf("make VAPID keys: %w", err)
	}
	data, _ = json.Marshal(k)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return k, err
	}
	return k, os.Rename(tmp, path)
}

// pushPayload is what the service worker receives (web/public/sw.js shows it).
type pushPayload struct {
	Title string `json:"title"`
	Body  string `json:"body"`
	URL   string `json:"url,omitempty"`
	Tag   string `json:"tag"`
	What  string `json:"what"`
}

// push sends msg to one browser, encrypted to its keys (RFC 8291) and signed with the
// daemon's VAPID key. A push service that no longer knows the subscription (404, 410)
// has it deleted.
func (n *Notifier) push(ctx context.Context, s *store.PushSubscription, msg Message) error {
	payload, _ := json.Marshal(pushPayload{Title: msg.Title, Body: msg.Body, URL: msg.URL, Tag: msg.Tag(), What: msg.What})
	urgency := webpush.UrgencyNormal
	if msg.What == Waiting {
		urgency = webpush.UrgencyHigh
	}
	resp, err := webpush.SendNotificationWithContext(ctx, payload,
		&webpush.Subscription{Endpoint: s.Endpoint, Keys: webpush.Keys{P256dh: s.P256DH, Auth: s.Auth}},
		&webpush.Options{
			HTTPClient:      n.opts.Client,
			Subscriber:      n.contact(),
			TTL:             int((12 * time.Hour).Seconds()),
			Urgency:         urgency,
			VAPIDPublicKey:  n.keys.Public,
			VAPIDPrivateKey: n.keys.Private,
		})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone {
		n.log.Info("push subscription gone: deleted", "id", s.ID, "status", resp.StatusCode)
		if err := n.opts.Store.DeletePushSubscription(context.WithoutCancel(ctx), s.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			n.log.Error("delete push subscription", "id", s.ID, "err", err)
		}
		return &deliveryError{status: resp.StatusCode, body: "the browser unsubscribed; the subscription was deleted"}
	}
	if err := refusal(resp, body); err != nil {
		return err
	}
	if err := n.opts.Store.TouchPushSubscription(context.WithoutCancel(ctx), s.ID, time.Now()); err != nil {
		n.log.Warn("record push", "id", s.ID, "err", err)
	}
	return nil
}

// contact is the VAPID subject as webpush-go takes it: an https: URL, or an address it
// prefixes with mailto: itself.
func (n *Notifier) contact() string {
	c := n.opts.Config.Contact
	if c == "" {
		return "paddock@localhost"
	}
	return strings.TrimPrefix(c, "mailto:")
}

func pushTarget(s store.PushSubscription) Target {
	where := s.Endpoint
	if u, err := url.Parse(s.Endpoint); err == nil {
		where = u.Host
	}
	return Target{ID: fmt.Sprint(s.ID), Kind: "push", Where: where, Label: s.Label, Created: s.Created, LastSent: s.LastSent}
}

// Subscribe stores a browser's subscription after checking its keys are usable.
func (n *Notifier) Subscribe(ctx context.Context, s store.PushSubscription) (int64, error) {
	u, err := url.Parse(s.Endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return 0, fmt.Errorf("endpoint %q is not a push service URL", s.Endpoint)
	}
	if err := checkKeys(s.P256DH, s.Auth); err != nil {
		return 0, err
	}
	s.Created = time.Now()
	return n.opts.Store.AddPushSubscription(ctx, s)
}

// Unsubscribe deletes a subscription by id.
func (n *Notifier) Unsubscribe(ctx context.Context, id int64) error {
	return n.opts.Store.DeletePushSubscription(ctx, id)
}
