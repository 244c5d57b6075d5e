// Package pushtest is a Web Push service for tests: it stands in for the push services
// browsers subscribe with (FCM, Mozilla's autopush...), which tests cannot reach, and it
// checks what they check. Each request must carry a VAPID Authorization header (RFC 8292:
// "vapid t=JWT, k=KEY") whose ES256 token verifies with that key and claims this service's
// origin as aud, an exp within 24 hours and a mailto: or https: sub; a TTL; and a body
// encrypted with aes128gcm (RFC 8188) to the subscription's keys (RFC 8291), which the
// service decrypts with the browser's private key it holds, as the browser would.
package pushtest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Subscription is what a browser's PushManager.subscribe gives the page, as JSON.
type Subscription struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256DH string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// Push is one message the service accepted.
type Push struct {
	// Endpoint is the subscription it was sent to.
	Endpoint string
	// Payload is the decrypted message.
	Payload []byte
	// Subject is the VAPID token's sub claim; Key the VAPID public key.
	Subject, Key string
	TTL          int
	Urgency      string
}

// Service is a running push service.
type Service struct {
	srv *httptest.Server

	mu      sync.Mutex
	subs    map[string]*browser // by endpoint
	pushes  []Push
	errs    []error
	arrived chan struct{}
}

type browser struct {
	key    *ecdh.PrivateKey
	auth   []byte
	status int // answered to the next pushes; 0 means 201
}

// Start starts a service; it stops when the test ends.
func Start(t interface{ Cleanup(func()) }) *Service {
	s := &Service{subs: map[string]*browser{}, arrived: make(chan struct{}, 1000)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the service's origin.
func (s *Service) URL() string { return s.srv.URL }

// Subscribe makes a subscription as a browser would: a new P-256 key pair and auth
// secret, and an endpoint on this service.
func (s *Service) Subscribe() Subscription {
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	var sub Subscription
	sub.Endpoint = fmt.Sprintf("%s/push/%x", s.srv.URL, key.PublicKey().Bytes()[1:9])
	sub.Keys.P256DH = base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes())
	sub.Keys.Auth = base64.RawURLEncoding.EncodeToString(auth)
	s.mu.Lock()
	s.subs[sub.Endpoint] = &browser{key: key, auth: auth}
	s.mu.Unlock()
	return sub
}

// Answer makes the service answer status to the next pushes to endpoint, as a push
// service answers 410 Gone for a subscription the browser dropped.
func (s *Service) Answer(endpoint string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.subs[endpoint]; b != nil {
		b.status = status
	}
}

// Pushes returns the messages accepted so far.
func (s *Service) Pushes() []Push {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Push(nil), s.pushes...)
}

// Errors returns what was wrong with the requests refused so far.
func (s *Service) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

// Wait waits until n pushes were accepted in all, or the timeout passes.
func (s *Service) Wait(n int, timeout time.Duration) []Push {
	deadline := time.After(timeout)
	for {
		if p := s.Pushes(); len(p) >= n {
			return p
		}
		select {
		case <-s.arrived:
		case <-deadline:
			return s.Pushes()
		}
	}
}

func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	endpoint := s.srv.URL + r.URL.Path
	s.mu.Lock()
	b := s.subs[endpoint]
	s.mu.Unlock()
	push, err := s.check(r, b)
	if err != nil {
		s.mu.Lock()
		s.errs = append(s.errs, err)
		s.mu.Unlock()
		status := http.StatusBadRequest
		if b == nil {
			status = http.StatusNotFound
		} else if strings.HasPrefix(err.Error(), "vapid") {
			status = http.StatusUnauthorized
		}
		http.Error(w, err.Error(), status)
		return
	}
	if b.status != 0 {
		http.Error(w, http.StatusText(b.status), b.status)
		return
	}
	push.Endpoint = endpoint
	s.mu.Lock()
	s.pushes = append(s.pushes, push)
	s.mu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusCreated)
}

func (s *Service) check(r *http.Request, b *browser) (Push, error) {
	var p Push
	if r.Method != http.MethodPost {
		return p, fmt.Errorf("method %s, want POST", r.Method)
	}
	if b == nil {
		return p, errors.New("no such subscription")
	}
	ttl, err := strconv.Atoi(r.Header.Get("TTL"))
	if err != nil || ttl < 0 {
		return p, fmt.Errorf("TTL header %q: want a number of seconds", r.Header.Get("TTL"))
	}
	p.TTL = ttl
	p.Urgency = r.Header.Get("Urgency")
	if u := p.Urgency; u != "" && u != "very-low" && u != "low" && u != "normal" && u != "high" {
		return p, fmt.Errorf("the Urgency header %q is not very-low, low, normal or high", u)
	}
	if p.Subject, p.Key, err = s.checkVAPID(r.Header.Get("Authorization")); err != nil {
		return p, err
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "aes128gcm" {
		return p, fmt.Errorf("Content-Encoding %q, want aes128gcm", ce)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8192))
	if err != nil {
		return p, err
	}
	if len(body) > 4096 {
		return p, fmt.Errorf("body of %d bytes: push services take at most 4096", len(body))
	}
	p.Payload, err = decrypt(b, body)
	return p, err
}

// checkVAPID verifies "vapid t=JWT, k=KEY" (RFC 8292 section 3).
func (s *Service) checkVAPID(h string) (sub, key string, err error) {
	rest, ok := strings.CutPrefix(h, "vapid ")
	if !ok {
		return "", "", fmt.Errorf("vapid: Authorization %q does not start with \"vapid \"", h)
	}
	var tok string
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			tok = v
		case "k":
			key = v
		}
	}
	raw, err := base64.RawURLEncoding.DecodeString(key)
	if err != nil || len(raw) != 65 || raw[0] != 4 {
		return "", "", fmt.Errorf("vapid: k=%q is not an uncompressed P-256 point in base64url", key)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		return "", "", fmt.Errorf("vapid: k=%q: %v", key, err)
	}
	claims := jwt.MapClaims{}
	_, err = jwt.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience(s.srv.URL), jwt.WithExpirationRequired())
	if err != nil {
		return "", "", fmt.Errorf("vapid: token: %v", err)
	}
	exp, _ := claims.GetExpirationTime()
	if exp.After(time.Now().Add(24 * time.Hour)) {
		return "", "", fmt.Errorf("vapid: exp %v is more than 24 hours away", exp)
	}
	sub, _ = claims["sub"].(string)
	if !strings.HasPrefix(sub, "mailto:") && !strings.HasPrefix(sub, "https:") {
		return "", "", fmt.Errorf("vapid: sub %q is not a mailto: or https: URL", sub)
	}
	return sub, key, nil
}

// decrypt opens an aes128gcm body (RFC 8188) encrypted to the browser (RFC 8291).
func decrypt(b *browser, body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("body shorter than its header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen || idlen != 65 {
		return nil, fmt.Errorf("keyid of %d bytes: want the sender's 65-byte public key", idlen)
	}
	if rs < 18 {
		return nil, fmt.Errorf("record size %d", rs)
	}
	senderKey, err := ecdh.P256().NewPublicKey(body[21 : 21+idlen])
	if err != nil {
		return nil, fmt.Errorf("keyid: %v", err)
	}
	records := body[21+idlen:]
	if len(records) > int(rs) {
		return nil, errors.New("more than one record: a push message has one")
	}
	secret, err := b.key.ECDH(senderKey)
	if err != nil {
		return nil, err
	}
	info := append([]byte("WebPush: info\x00"), b.key.PublicKey().Bytes()...)
	info = append(info, senderKey.Bytes()...)
	ikm, err := hkdf.Key(sha256.New, secret, b.auth, string(info), 32)
	if err != nil {
		return nil, err
	}
	cek, _ := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	nonce, _ := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	block, _ := aes.NewCipher(cek)
	gcm, _ := cipher.NewGCM(block)
	plain, err := gcm.Open(nil, nonce, records, nil)
	if err != nil {
		return nil, fmt.Errorf("decrypt: %v (not encrypted to this subscription's keys)", err)
	}
	// The last record ends with 0x02 then zero padding.
	end := len(plain) - 1
	for end >= 0 && plain[end] == 0 {
		end--
	}
	if end < 0 || plain[end] != 2 {
		return nil, errors.New("no last-record delimiter after the padding")
	}
	return plain[:end], nil
}
