package guestpb

import (
	"storj.io/drpc"

	"github.com/paddockhq/paddock/internal/guestproto"
)

// MarshalAppend completes the generated DRPC encoding (which protoc-gen-go-drpc gives only
// Marshal and Unmarshal for a protolib of its own): DRPC then marshals a call's messages
// into a buffer it keeps (see guestproto.MarshalAppend).
func (drpcEncoding_File_paddock_guest_v1_guest_proto) MarshalAppend(buf []byte, msg drpc.Message) ([]byte, error) {
	return guestproto.MarshalAppend(buf, msg)
}
