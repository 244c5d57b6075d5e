package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/coder/websocket"
)

// ExecRequest is the first (text) message on an exec WebSocket.
type ExecRequest struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	TTY  bool     `json:"tty,omitempty"`
	Rows uint16   `json:"rows,omitempty"`
	Cols uint16   `json:"cols,omitempty"`
}

// Control is a text message on an exec WebSocket after the first. The client sends
// "resize" (Rows, Cols), "eof" (stdin is closed) and "signal" (Signal); the server sends
// "exit" (Code, Error) once, last.
type Control struct {
	Type   string `json:"type"`
	Rows   uint16 `json:"rows,omitempty"`
	Cols   uint16 `json:"cols,omitempty"`
	Signal int    `json:"signal,omitempty"`
	Code   int    `json:"code"`
	Error  string `json:"error,omitempty"`
}

// Binary messages on an exec WebSocket carry stream data: the first byte names the
// stream.
const (
	StreamStdin  byte = 0
	StreamStdout byte = 1
	StreamStderr byte = 2
)

// ExecIO wires an exec's streams. Resize and Signal are optional.
type ExecIO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Resize         <-chan [2]uint16 // rows, cols
	Signal         <-chan syscall.Signal
}

// DialError is a request that got no answer: the daemon was not reached (nobody
// listens, or the connection failed), so nothing was done.
type DialError struct{ Err error }

func (e *DialError) Error() string { return e.Err.Error() }
func (e *DialError) Unwrap() error { return e.Err }

// Exec runs a process in a sandbox and returns its exit code. An error with no answer
// from the daemon is a *DialError.
func (c *Client) Exec(ctx context.Context, name string, req ExecRequest, eio ExecIO) (int, error) {
	ws, resp, err := websocket.Dial(ctx, c.WS+SandboxPath(name, "/exec"), &websocket.DialOptions{HTTPClient: c.HTTP})
	if err != nil {
		if resp != nil && resp.StatusCode >= 400 {
			return 0, DecodeError(resp)
		}
		if resp == nil {
			return 0, &DialError{err}
		}
		return 0, err
	}
	defer ws.CloseNow()
	ws.SetReadLimit(16 << 20)
	first, _ := json.Marshal(req)
	if err := ws.Write(ctx, websocket.MessageText, first); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	send := func(ctl Control) {
		msg, _ := json.Marshal(ctl)
		ws.Write(ctx, websocket.MessageText, msg)
	}
	if eio.Stdin != nil {
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := eio.Stdin.Read(buf)
				if n > 0 {
					msg := append([]byte{StreamStdin}, buf[:n]...)
					if ws.Write(ctx, websocket.MessageBinary, msg) != nil {
						return
					}
				}
				if err != nil {
					send(Control{Type: "eof"})
					return
				}
			}
		}()
	} else {
		send(Control{Type: "eof"})
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case sz := <-eio.Resize:
				send(Control{Type: "resize", Rows: sz[0], Cols: sz[1]})
			case sig := <-eio.Signal:
				send(Control{Type: "signal", Signal: int(sig)})
			}
		}
	}()
	for {
		typ, msg, err := ws.Read(ctx)
		if err != nil {
			return 0, fmt.Errorf("exec stream ended before the process exited: %w", err)
		}
		if typ == websocket.MessageBinary && len(msg) > 0 {
			w := eio.Stdout
			if msg[0] == StreamStderr {
				w = eio.Stderr
			}
			if w != nil {
				w.Write(msg[1:])
			}
			continue
		}
		var ctl Control
		if json.Unmarshal(msg, &ctl) == nil && ctl.Type == "exit" {
			if ctl.Error != "" {
				return ctl.Code, errors.New(ctl.Error)
			}
			return ctl.Code, nil
		}
	}
}
