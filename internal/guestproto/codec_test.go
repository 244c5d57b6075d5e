package guestproto_test

import (
	"testing"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// TestMarshalAppend: a message appended to a buffer decodes as itself, after what the
// buffer held, and the buffer's room is reused.
func TestMarshalAppend(t *testing.T) {
	msg := &guestpb.ExecResponse{Msg: &guestpb.ExecResponse_Stdout{Stdout: []byte("some output")}}
	buf, err := guestproto.MarshalAppend([]byte("head"), msg)
	if err != nil || string(buf[:4]) != "head" {
		t.Fatalf("MarshalAppend = %q, %v", buf, err)
	}
	var got guestpb.ExecResponse
	if err := guestproto.Unmarshal(buf[4:], &got); err != nil || string(got.GetStdout()) != "some output" {
		t.Fatalf("decoded %v, %v", &got, err)
	}
	again, err := guestproto.MarshalAppend(buf[:0], msg)
	if err != nil || &again[0] != &buf[0] {
		t.Errorf("a second message into the same buffer: a new buffer (err %v)", err)
	}
}
