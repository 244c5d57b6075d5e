package guestproto

import (
	"context"
	"errors"
	"fmt"

	"storj.io/drpc/drpcerr"
)

// Code classifies a guest's failure. It travels with the error's message as the DRPC
// error code of a call, and in a file stream's FileStatus. The values are gRPC's status
// codes (protocol 1 carried gRPC), with PathEscapes added.
type Code uint32

// The codes the guest answers with.
const (
	OK                 Code = 0
	Canceled           Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	NotFound           Code = 5
	AlreadyExists      Code = 6
	PermissionDenied   Code = 7
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
	// PathEscapes is an invalid argument: a path that would leave its root, through
	// "..", an absolute path elsewhere or a symlink.
	PathEscapes Code = 64
)

var codeNames = map[Code]string{
	OK: "ok", Canceled: "canceled", Unknown: "unknown", InvalidArgument: "invalid argument",
	DeadlineExceeded: "deadline exceeded", NotFound: "not found", AlreadyExists: "already exists",
	PermissionDenied: "permission denied", ResourceExhausted: "resource exhausted",
	FailedPrecondition: "failed precondition", Unimplemented: "unimplemented",
	Internal: "internal", Unavailable: "unavailable", PathEscapes: "path escapes root",
}

// String names the code.
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("code %d", uint32(c))
}

// Error is a failure the guest answers a call with: a code and a message meant for a
// person ("open /workspace/x: file does not exist").
type Error struct {
	Code    Code
	Message string
}

// Errorf returns an *Error with code and the formatted message.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// CodeOf is the code the guest answers err with: an *Error's own, Canceled or
// DeadlineExceeded for a context's error, and Unknown for anything else.
func CodeOf(err error) Code {
	var e *Error
	switch {
	case err == nil:
		return OK
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded
	}
	return Unknown
}

// WireError is err as the guest sends it over DRPC: its message with its code (never
// OK, which DRPC would take for no code at all).
func WireError(err error) error {
	if err == nil {
		return nil
	}
	code := CodeOf(err)
	if code == OK {
		code = Unknown
	}
	return drpcerr.WithCode(err, uint64(code))
}

// RemoteCode is the code a DRPC call's error came back with from the guest, and false
// when err did not come from the guest (the connection failed, or the call was
// cancelled on this side).
func RemoteCode(err error) (Code, bool) {
	c := drpcerr.Code(err)
	if c == 0 || c > 1<<32-1 {
		return 0, false
	}
	return Code(c), true
}
