package sshhost

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/paddockhq/paddock/internal/backend"
)

// The wire between the daemon and `paddock backend serve` on a host: the serve
// process's stdin and stdout, over one SSH session. It writes one hello line (JSON),
// then both sides run yamux, the daemon as the client. Each call is a stream of its
// own: one request line, one response line. A dial's stream, after its response, is the
// byte stream to the sandbox's guest; a put-guest's request is followed by the
// binary's bytes when the response asks for them, then a second response.

// Magic starts every hello, so a daemon that reached something else says so.
const Magic = "paddock-backend"

// Protocol is the wire's version; a serve process of another version is replaced.
const Protocol = 1

// hello is the serve process's first line.
type hello struct {
	Magic    string `json:"magic"`
	Protocol int    `json:"protocol"`
	// Backend is the host's backend that serves the sandboxes (bwrap, docker).
	Backend string `json:"backend,omitempty"`
	// Version is the remote paddock's version.
	Version string `json:"version,omitempty"`
	// Error, when set, says the host can run no sandbox, and why.
	Error *wireError `json:"error,omitempty"`
}

// The calls.
const (
	opAvailable = "available"
	opCreate    = "create"
	opStart     = "start"
	opStop      = "stop"
	opDestroy   = "destroy"
	opState     = "state"
	opLimits    = "limits"
	opDial      = "dial"
	opPutGuest  = "put-guest"
	opExpect    = "expect"
	opLeftovers = "leftovers"
)

type request struct {
	Op   string        `json:"op"`
	ID   backend.ID    `json:"id,omitempty"`
	Spec *backend.Spec `json:"spec,omitempty"`
	// SHA256 and Size describe the guest binary of a put-guest.
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
	// Runtime is an expect's runtime (empty: the host backend's default).
	Runtime string `json:"runtime,omitempty"`
}

type response struct {
	Status *backend.Status `json:"status,omitempty"`
	Limits *backend.Limits `json:"limits,omitempty"`
	// Expect is what the checks expect of the host backend's sandboxes.
	Expect *backend.Expect `json:"expect,omitempty"`
	// Left is what a destroyed sandbox left on the host.
	Left []string `json:"left,omitempty"`
	// Send asks a put-guest's client for the binary; Path is where the host keeps it.
	Send bool       `json:"send,omitempty"`
	Path string     `json:"path,omitempty"`
	Err  *wireError `json:"error,omitempty"`
}

// wireError carries the errors the daemon acts on across the wire with their kind.
type wireError struct {
	Kind    string `json:"kind,omitempty"` // unavailable, not-found, limits-not-enforced
	Message string `json:"message"`
	Backend string `json:"backend,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Fix     string `json:"fix,omitempty"`
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	var ue *backend.UnavailableError
	var le *backend.LimitsNotEnforcedError
	switch {
	case errors.As(err, &ue):
		return &wireError{Kind: "unavailable", Message: err.Error(), Backend: ue.Backend, Reason: ue.Reason, Fix: ue.Fix}
	case errors.As(err, &le):
		return &wireError{Kind: "limits-not-enforced", Message: err.Error(), Reason: le.Reason, Fix: le.Fix}
	case errors.Is(err, backend.ErrNotFound):
		return &wireError{Kind: "not-found", Message: err.Error()}
	}
	return &wireError{Message: err.Error()}
}

// remoteError is an error the host's backend returned, with the host named.
type remoteError struct {
	host string
	msg  string
	is   error
}

func (e *remoteError) Error() string { return e.host + ": " + e.msg }
func (e *remoteError) Unwrap() error { return e.is }

func (w *wireError) err(host string) error {
	if w == nil {
		return nil
	}
	switch w.Kind {
	case "unavailable":
		return &backend.UnavailableError{Backend: Name, Reason: fmt.Sprintf("on host %s, %s: %s", host, w.Backend, w.Reason), Fix: w.Fix}
	case "limits-not-enforced":
		return &backend.LimitsNotEnforcedError{Reason: "on host " + host + ": " + w.Reason, Fix: w.Fix + " (on " + host + ")"}
	case "not-found":
		return &remoteError{host: host, msg: w.Message, is: backend.ErrNotFound}
	}
	return &remoteError{host: host, msg: w.Message}
}

// maxLine bounds a request or response line.
const maxLine = 1 << 20

// writeLine writes v as one JSON line.
func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readLine reads one JSON line into v, a byte at a time, so that nothing after it (the
// yamux session, a dial's stream) is taken into a buffer.
func readLine(r io.Reader, v any) error {
	var line []byte
	var b [1]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			if len(line) == 0 && errors.Is(err, io.EOF) {
				return io.EOF
			}
			return err
		}
		if b[0] == '\n' {
			break
		}
		line = append(line, b[0])
		if len(line) > maxLine {
			return errors.New("line too long")
		}
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("%w (it said %q)", err, truncate(string(line), 120))
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
