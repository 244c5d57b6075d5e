package pushtest

import (
	"strings"
	"testing"

	"github.com/SherClockHolmes/webpush-go"
)

// The service refuses what a real push service refuses, and takes what it takes.
func TestChecks(t *testing.T) {
	s := Start(t)
	sub, other := s.Subscribe(), s.Subscribe()
	priv, pub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	_, otherPub, _ := webpush.GenerateVAPIDKeys()
	send := func(to Subscription, keys Subscription, opts webpush.Options) int {
		resp, err := webpush.SendNotification([]byte(`{"title":"hi"}`),
			&webpush.Subscription{Endpoint: to.Endpoint, Keys: webpush.Keys{P256dh: keys.Keys.P256DH, Auth: keys.Keys.Auth}}, &opts)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	good := webpush.Options{Subscriber: "ops@example.com", TTL: 60, VAPIDPublicKey: pub, VAPIDPrivateKey: priv}
	if code := send(sub, sub, good); code != 201 {
		t.Fatalf("a good push: %d %v", code, s.Errors())
	}
	if p := s.Pushes(); len(p) != 1 || string(p[0].Payload) != `{"title":"hi"}` || p[0].Subject != "mailto:ops@example.com" {
		t.Fatalf("pushes %+v", p)
	}
	wrongKey := good
	wrongKey.VAPIDPublicKey = otherPub // k= does not verify the token
	if code := send(sub, sub, wrongKey); code != 401 || !strings.Contains(s.Errors()[0].Error(), "vapid: token") {
		t.Fatalf("a token signed by another key: %d %v", code, s.Errors())
	}
	// Encrypted to another browser's keys: this one cannot read it.
	if code := send(sub, other, good); code != 400 || !strings.Contains(s.Errors()[1].Error(), "decrypt") {
		t.Fatalf("a message for another browser: %d %v", code, s.Errors())
	}
	s.Answer(sub.Endpoint, 410)
	if code := send(sub, sub, good); code != 410 {
		t.Fatalf("after Answer(410): %d", code)
	}
	if len(s.Pushes()) != 1 {
		t.Fatalf("refused pushes were counted: %d", len(s.Pushes()))
	}
}
