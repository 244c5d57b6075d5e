package microvm

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// qmp is a client of QEMU's machine protocol on its unix socket: JSON objects, one a
// line; a greeting, capabilities negotiation, then commands, each answered by a
// "return" or an "error", with asynchronous "event"s in between.
type qmp struct {
	conn net.Conn
	r    *bufio.Reader
}

// qmpError is QEMU's answer to a command that failed.
type qmpError struct {
	Class string `json:"class"`
	Desc  string `json:"desc"`
}

func (e *qmpError) Error() string { return "qmp: " + e.Class + ": " + e.Desc }

// dialQMP connects to the socket and negotiates capabilities.
func dialQMP(ctx context.Context, socket string) (*qmp, error) {
	conn, err := dialUnix(ctx, socket)
	if err != nil {
		return nil, err
	}
	q := &qmp{conn: conn, r: bufio.NewReader(conn)}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Now().Add(10 * time.Second))
	}
	var greeting struct {
		QMP json.RawMessage `json:"QMP"`
	}
	if err := q.read(&greeting); err != nil || greeting.QMP == nil {
		conn.Close()
		return nil, fmt.Errorf("qmp greeting: %v", err)
	}
	if err := q.execute("qmp_capabilities", nil, nil); err != nil {
		conn.Close()
		return nil, err
	}
	return q, nil
}

func (q *qmp) Close() error { return q.conn.Close() }

func (q *qmp) read(v any) error {
	line, err := q.r.ReadBytes('\n')
	if err != nil {
		return err
	}
	return json.Unmarshal(line, v)
}

// execute runs a command and decodes its return value into out (when not nil).
func (q *qmp) execute(cmd string, args any, out any) error {
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	data, _ := json.Marshal(req)
	if _, err := q.conn.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("qmp %s: %w", cmd, err)
	}
	for {
		var resp struct {
			Return json.RawMessage `json:"return"`
			Error  *qmpError       `json:"error"`
			Event  string          `json:"event"`
		}
		if err := q.read(&resp); err != nil {
			return fmt.Errorf("qmp %s: %w", cmd, err)
		}
		switch {
		case resp.Event != "":
			continue
		case resp.Error != nil:
			return resp.Error
		}
		if out != nil && resp.Return != nil {
			return json.Unmarshal(resp.Return, out)
		}
		return nil
	}
}

// qmpStatus is query-status's answer: the VM's run state ("running", "paused",
// "shutdown", "internal-error", ...).
type qmpStatus struct {
	Running bool   `json:"running"`
	Status  string `json:"status"`
}
