// Package apperr defines the errors a user can act on. Each carries a kind, which the API
// maps to an HTTP status and the CLI to an exit code, and a hint saying what to run next.
package apperr

import (
	"errors"
	"fmt"
)

// Kind classifies an error for the API and the CLI.
type Kind string

// The kinds of user-facing errors.
const (
	KindInvalid     Kind = "invalid"     // bad input: fix the command
	KindNotFound    Kind = "not_found"   // no such sandbox, file...
	KindConflict    Kind = "conflict"    // a name is taken, the sandbox is running...
	KindUnavailable Kind = "unavailable" // a backend or the daemon cannot serve this here
	KindInternal    Kind = "internal"    // a failure the user cannot fix by changing the command
	// KindCheckFailed: a check found what must not be: a sandbox that does not hold
	// (paddock verify), a record changed after it was written (audit --verify).
	KindCheckFailed Kind = "check_failed"

	// The kinds only the API's TCP listener answers (paddock web): the unix socket's
	// file mode is its authentication.
	KindUnauthorized Kind = "unauthorized"      // no credentials, or ones the daemon does not know
	KindForbidden    Kind = "forbidden"         // known credentials that may not do this
	KindRateLimited  Kind = "too_many_requests" // too many failed attempts from one address
)

// Error is an error with a kind and a hint.
type Error struct {
	Kind    Kind
	Message string
	// Hint says what to run next, e.g. "run `paddock ls`".
	Hint string
	Err  error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

func newf(kind Kind, hint, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Kind: kind, Message: err.Error(), Hint: hint, Err: errors.Unwrap(err)}
}

// Invalid reports bad input.
func Invalid(hint, format string, args ...any) *Error {
	return newf(KindInvalid, hint, format, args...)
}

// NotFound reports a missing thing.
func NotFound(hint, format string, args ...any) *Error {
	return newf(KindNotFound, hint, format, args...)
}

// Conflict reports a clash with the current state.
func Conflict(hint, format string, args ...any) *Error {
	return newf(KindConflict, hint, format, args...)
}

// Unavailable reports something that cannot run here.
func Unavailable(hint, format string, args ...any) *Error {
	return newf(KindUnavailable, hint, format, args...)
}

// CheckFailed reports a check that found what must not be (KindCheckFailed).
func CheckFailed(hint, format string, args ...any) *Error {
	return newf(KindCheckFailed, hint, format, args...)
}

// Unauthorized reports a request without valid credentials.
func Unauthorized(hint, format string, args ...any) *Error {
	return newf(KindUnauthorized, hint, format, args...)
}

// Forbidden reports a request its credentials do not allow.
func Forbidden(hint, format string, args ...any) *Error {
	return newf(KindForbidden, hint, format, args...)
}

// KindOf returns the kind of err, KindInternal when it has none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// HintOf returns the hint of err, if any.
func HintOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return ""
}
