package guestclient

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/paddockhq/paddock/internal/guestproto"
)

// ErrPathEscapes matches (with errors.Is) the guest's refusal of a path that would leave
// its root, through "..", an absolute path elsewhere or a symlink.
var ErrPathEscapes = errors.New("path escapes root")

// Error is a failure reported by the guest. Its message is the guest's own, for example
// "open /workspace/x: file does not exist". It matches fs.ErrNotExist, fs.ErrPermission,
// fs.ErrExist and ErrPathEscapes with errors.Is, according to its code.
type Error struct {
	// Code is the code the guest answered with.
	Code guestproto.Code
	// Message is the guest's explanation.
	Message string
}

// Error returns the guest's message.
func (e *Error) Error() string { return e.Message }

// Is maps the code onto the fs sentinel errors and ErrPathEscapes.
func (e *Error) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e.Code == guestproto.NotFound
	case fs.ErrPermission:
		return e.Code == guestproto.PermissionDenied
	case fs.ErrExist:
		return e.Code == guestproto.AlreadyExists
	case ErrPathEscapes:
		return e.Code == guestproto.PathEscapes
	}
	return false
}

// ExecStartError is returned by Exec when the process could not be started at all (no
// such executable, not executable, no such working directory).
type ExecStartError struct {
	Argv []string
	// Message is the guest's explanation.
	Message string
}

// Error returns the guest's explanation.
func (e *ExecStartError) Error() string { return e.Message }

// translate turns an error from a call into the package's errors: the context's own error
// when ctx is done, an *Error for the guest's answer, and a wrapped error naming op for
// anything else (the connection failed).
func translate(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", op, ctxErr)
	}
	code, ok := guestproto.RemoteCode(err)
	if !ok {
		return fmt.Errorf("%s: %w", op, err)
	}
	return guestError(op, code, err.Error())
}

// guestError is the *Error for the guest's answer code and message to op.
func guestError(op string, code guestproto.Code, msg string) *Error {
	e := &Error{Code: code, Message: msg}
	switch e.Code {
	case guestproto.Canceled, guestproto.DeadlineExceeded, guestproto.Internal, guestproto.Unknown:
		// Failures that are not about a file carry no path or operation; say which call failed.
		e.Message = op + ": " + e.Message
	}
	return e
}
