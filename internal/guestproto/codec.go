package guestproto

import (
	"fmt"
	"slices"
)

// Marshal and Unmarshal are the encoding of guestpb's messages in DRPC calls (the
// protolib protoc-gen-go-drpc generates guestpb's services with). The messages marshal
// themselves: protoc-gen-go-lite writes their encoding out, with no reflection, so the
// guest links no protobuf runtime.
func Marshal(msg any) ([]byte, error) {
	m, ok := msg.(interface{ MarshalVT() ([]byte, error) })
	if !ok {
		return nil, fmt.Errorf("guest protocol: %T is not a guestpb message", msg)
	}
	return m.MarshalVT()
}

// Unmarshal decodes buf into msg, a guestpb message.
func Unmarshal(buf []byte, msg any) error {
	m, ok := msg.(interface{ UnmarshalVT([]byte) error })
	if !ok {
		return fmt.Errorf("guest protocol: %T is not a guestpb message", msg)
	}
	return m.UnmarshalVT(buf)
}

// MarshalAppend appends msg's encoding to buf: DRPC marshals every message of a call into
// one buffer it keeps, instead of a new one each time (a 256 KiB chunk of output was a
// fresh allocation, cleared and then copied again, per message).
func MarshalAppend(buf []byte, msg any) ([]byte, error) {
	m, ok := msg.(interface {
		SizeVT() int
		MarshalToSizedBufferVT([]byte) (int, error)
	})
	if !ok {
		return nil, fmt.Errorf("guest protocol: %T is not a guestpb message", msg)
	}
	size := m.SizeVT()
	start := len(buf)
	buf = slices.Grow(buf, size)[:start+size]
	if _, err := m.MarshalToSizedBufferVT(buf[start:]); err != nil {
		return nil, err
	}
	return buf, nil
}
