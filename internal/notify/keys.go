package notify

import (
	"crypto/ecdh"
	"encoding/base64"
	"fmt"
	"strings"
)

// decodeKey reads a base64url key as browsers give it (with or without padding).
func decodeKey(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// checkKeys refuses a subscription whose keys could not be encrypted to: p256dh must be
// a P-256 point, auth 16 bytes (RFC 8291).
func checkKeys(p256dh, auth string) error {
	pub, err := decodeKey(p256dh)
	if err != nil {
		return fmt.Errorf("keys.p256dh is not base64url: %v", err)
	}
	if _, err := ecdh.P256().NewPublicKey(pub); err != nil {
		return fmt.Errorf("keys.p256dh is not a P-256 public key")
	}
	a, err := decodeKey(auth)
	if err != nil || len(a) != 16 {
		return fmt.Errorf("keys.auth must be 16 bytes, base64url")
	}
	return nil
}
