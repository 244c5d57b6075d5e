package guestproto

import "fmt"

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
