package wire

import "time"

// NotifyTarget is somewhere notifications go, as `paddock notify ls` shows it.
type NotifyTarget struct {
	// ID is "webhook" for the config's webhook, or the push subscription's number.
	ID   string `json:"id"`
	Kind string `json:"kind"` // "webhook" or "push"
	// Where is the webhook URL, or the push service's host.
	Where string `json:"where"`
	// Label says which browser a push subscription is.
	Label    string    `json:"label,omitempty"`
	Created  time.Time `json:"created,omitzero"`
	LastSent time.Time `json:"last_sent,omitzero"`
}

// NotifyResult is the outcome of one delivery of `paddock notify test`.
type NotifyResult struct {
	Target NotifyTarget `json:"target"`
	// Error is empty when the target accepted the message.
	Error string `json:"error,omitempty"`
}

// NotifyStatus is what GET /v1/notify reports: the key browsers subscribe with, and
// where notifications go.
type NotifyStatus struct {
	// PublicKey is the daemon's VAPID public key (base64url), the applicationServerKey
	// of PushManager.subscribe.
	PublicKey string         `json:"public_key"`
	Targets   []NotifyTarget `json:"targets"`
}

// PushSubscriptionRequest is the body of POST /v1/notify/subscriptions: a browser's
// PushSubscription as its toJSON() gives it, and a label for people.
type PushSubscriptionRequest struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256DH string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
	Label string `json:"label,omitempty"`
}
