package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/shell"
)

// Binary messages carry stream data: the first byte names the stream.
const (
	streamStdin  = wire.StreamStdin
	streamStdout = wire.StreamStdout
	streamStderr = wire.StreamStderr
)

// exec runs a process in the sandbox, streaming it over a WebSocket.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	c, err := s.svc.Client(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ws.SetReadLimit(4 << 20)
	ctx := r.Context()

	typ, first, err := ws.Read(ctx)
	var req ExecRequest
	if err == nil && typ == websocket.MessageText {
		err = json.Unmarshal(first, &req)
	}
	if err != nil || len(req.Argv) == 0 {
		ws.Close(websocket.StatusPolicyViolation, "the first message must be an ExecRequest with argv")
		return
	}
	noteAudit(r.Context(), shell.Join(req.Argv))

	stdinR, stdinW := io.Pipe()
	resize := make(chan guestclient.Size, 4)
	signals := make(chan syscall.Signal, 4)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer stdinW.Close()
		for {
			typ, msg, err := ws.Read(ctx)
			if err != nil {
				cancel() // the client is gone: end the process
				return
			}
			if typ == websocket.MessageBinary {
				if len(msg) > 1 && msg[0] == streamStdin {
					if _, err := stdinW.Write(msg[1:]); err != nil {
						return
					}
				}
				continue
			}
			var ctl Control
			if json.Unmarshal(msg, &ctl) != nil {
				continue
			}
			switch ctl.Type {
			case "eof":
				stdinW.Close()
			case "resize":
				select {
				case resize <- guestclient.Size{Rows: ctl.Rows, Cols: ctl.Cols}:
				default:
				}
			case "signal":
				signals <- syscall.Signal(ctl.Signal)
			}
		}
	}()

	started := time.Now()
	code, err := c.Exec(ctx, guestclient.ExecOptions{
		Argv: req.Argv, Env: req.Env, Dir: req.Dir, TTY: req.TTY,
		Size:  guestclient.Size{Rows: req.Rows, Cols: req.Cols},
		Stdin: stdinR, Stdout: &streamWriter{ws, streamStdout}, Stderr: &streamWriter{ws, streamStderr},
		Resize: resize, Signal: signals,
	})
	s.flightExec(ctx, r.PathValue("name"), req, code, err, time.Since(started))
	exit := Control{Type: "exit", Code: code}
	if err != nil {
		exit.Error = err.Error()
		var se *guestclient.ExecStartError
		if !errors.As(err, &se) && exit.Code == 0 {
			exit.Code = 125
		}
	}
	msg, _ := json.Marshal(exit)
	if ws.Write(context.WithoutCancel(ctx), websocket.MessageText, msg) == nil {
		ws.Close(websocket.StatusNormalClosure, "")
	}
}

// streamWriter sends writes as binary messages tagged with a stream byte.
type streamWriter struct {
	ws     *websocket.Conn
	stream byte
}

func (w *streamWriter) Write(p []byte) (int, error) {
	msg := make([]byte, 1+len(p))
	msg[0] = w.stream
	copy(msg[1:], p)
	if err := w.ws.Write(context.Background(), websocket.MessageBinary, msg); err != nil {
		return 0, err
	}
	return len(p), nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func isEscape(err error) bool { return errors.Is(err, guestclient.ErrPathEscapes) }

// forward bridges a WebSocket's binary messages to a TCP port inside the sandbox, on its
// loopback, through the guest's forward tunnel (`paddock ssh`'s port forwarding).
func (s *Server) forward(w http.ResponseWriter, r *http.Request) {
	port, err := strconv.Atoi(r.URL.Query().Get("port"))
	if err != nil || port < 1 || port > 65535 {
		s.writeError(w, r, apperr.Invalid("", "port must be a TCP port, not %q", r.URL.Query().Get("port")))
		return
	}
	c, err := s.svc.Client(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	conn, err := c.Forward(r.Context(), uint32(port))
	if err != nil {
		s.writeError(w, r, apperr.Unavailable("is anything listening on that port in the sandbox?", "connect to port %d in sandbox %s: %v", port, r.PathValue("name"), err))
		return
	}
	defer conn.Close()
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ctx := r.Context()
	nc := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	defer nc.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(conn, nc); closeWrite(conn); done <- struct{}{} }()
	go func() { io.Copy(nc, conn); nc.Close(); done <- struct{}{} }()
	<-done
	<-done
}

// closeWrite half-closes a connection where it can.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}
