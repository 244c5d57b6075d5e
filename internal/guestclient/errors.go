package guestclient

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrPathEscapes matches (with errors.Is) the guest's refusal of a path that would leave
// its root, through "..", an absolute path elsewhere or a symlink.
var ErrPathEscapes = errors.New("path escapes root")

// The error detail the guest attaches to an ErrPathEscapes refusal.
const (
	errorDomain       = "agent.paddock.dev"
	reasonPathEscapes = "PATH_ESCAPES"
)

// Error is a failure reported by the guest. Its message is the guest's own, for example
// "open /workspace/x: file does not exist". It matches fs.ErrNotExist, fs.ErrPermission,
// fs.ErrExist and ErrPathEscapes with errors.Is, according to its code.
type Error struct {
	// Code is the gRPC status code the guest answered with.
	Code codes.Code
	// Message is the guest's explanation.
	Message string
	escapes bool
}

// Error returns the guest's message.
func (e *Error) Error() string { return e.Message }

// Is maps the status code onto the fs sentinel errors and ErrPathEscapes.
func (e *Error) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e.Code == codes.NotFound
	case fs.ErrPermission:
		return e.Code == codes.PermissionDenied
	case fs.ErrExist:
		return e.Code == codes.AlreadyExists
	case ErrPathEscapes:
		return e.escapes
	}
	return false
}

// GRPCStatus lets status.FromError and status.Code see the original code.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

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
// when ctx is done, an *Error for a guest status, and a wrapped error naming op for
// anything else.
func translate(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", op, ctxErr)
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", op, err)
	}
	escapes := false
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == errorDomain &&
			info.GetReason() == reasonPathEscapes {
			escapes = true
		}
	}
	return guestError(op, st.Code(), st.Message(), escapes)
}

// guestError is the *Error for the guest's answer code and message to op.
func guestError(op string, code codes.Code, msg string, escapes bool) *Error {
	e := &Error{Code: code, Message: msg, escapes: escapes}
	switch e.Code {
	case codes.Canceled, codes.DeadlineExceeded, codes.Internal, codes.Unknown:
		// Transport failures carry gRPC's wording; say which call failed.
		e.Message = op + ": " + e.Message
	}
	return e
}
