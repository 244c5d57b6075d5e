package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// StopDaemon asks the daemon to exit, leaving sandboxes running.
func (c *Client) StopDaemon(ctx context.Context) error {
	return c.Do(ctx, http.MethodPost, "/v1/daemon/stop", nil, nil)
}

// Doctor reports which backends and agents work here.
func (c *Client) Doctor(ctx context.Context) (wire.Doctor, error) {
	var out wire.Doctor
	err := c.Do(ctx, http.MethodGet, "/v1/doctor", nil, &out)
	return out, err
}

// List lists sandboxes.
func (c *Client) List(ctx context.Context) ([]wire.SandboxInfo, error) {
	var out []wire.SandboxInfo
	err := c.Do(ctx, http.MethodGet, "/v1/sandboxes", nil, &out)
	return out, err
}

// Get returns one sandbox.
func (c *Client) Get(ctx context.Context, name string) (wire.SandboxInfo, error) {
	var out wire.SandboxInfo
	err := c.Do(ctx, http.MethodGet, sandboxPath(name), nil, &out)
	return out, err
}

// Start starts a sandbox.
func (c *Client) Start(ctx context.Context, name string) (wire.SandboxInfo, error) {
	var out wire.SandboxInfo
	err := c.Do(ctx, http.MethodPost, sandboxPath(name, "/start"), nil, &out)
	return out, err
}

// Stop stops a sandbox.
func (c *Client) Stop(ctx context.Context, name string) (wire.SandboxInfo, error) {
	var out wire.SandboxInfo
	err := c.Do(ctx, http.MethodPost, sandboxPath(name, "/stop"), nil, &out)
	return out, err
}

// Suspend stops a sandbox with its memory saved, for Start to resume.
func (c *Client) Suspend(ctx context.Context, name string) (wire.SandboxInfo, error) {
	var out wire.SandboxInfo
	err := c.Do(ctx, http.MethodPost, sandboxPath(name, "/suspend"), nil, &out)
	return out, err
}

// Create makes a sandbox seeded from bundle, reporting progress as it goes.
func (c *Client) Create(ctx context.Context, req wire.SandboxCreateRequest, bundle io.Reader, progress func(string)) (wire.SandboxInfo, error) {
	hdr, _ := json.Marshal(req)
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+"/v1/sandboxes", bundle)
	if err != nil {
		return wire.SandboxInfo{}, err
	}
	r.Header.Set("X-Paddock-Request", string(hdr))
	r.Header.Set("Content-Type", "application/x-git-bundle")
	resp, err := c.HTTP.Do(r)
	if err != nil {
		return wire.SandboxInfo{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return wire.SandboxInfo{}, decodeError(resp)
	}
	last, err := readProgress(resp.Body, progress)
	if err != nil {
		return wire.SandboxInfo{}, err
	}
	if last.Sandbox == nil {
		return wire.SandboxInfo{}, errors.New("the daemon ended without the sandbox: see its log")
	}
	return *last.Sandbox, nil
}

// ReadFile copies a sandbox file to w.
func (c *Client) ReadFile(ctx context.Context, name, p string, w io.Writer) (int64, error) {
	resp, err := c.stream(ctx, http.MethodGet, sandboxPath(name, "/files")+fileQuery(p), nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("read %s: got %d of %d bytes", p, n, resp.ContentLength)
	}
	return n, err
}

// WriteFile writes r to a sandbox file atomically, creating parent directories.
func (c *Client) WriteFile(ctx context.Context, name, p string, mode uint32, r io.Reader) error {
	q := fileQuery(p) + "&parents=true&mode=" + strconv.FormatUint(uint64(mode&0o7777), 8)
	return c.Do(ctx, http.MethodPut, sandboxPath(name, "/files")+q, r, nil)
}

// Stat describes a sandbox path without following a final symlink.
func (c *Client) Stat(ctx context.Context, name, p string) (wire.FileInfo, error) {
	var fi wire.FileInfo
	err := c.Do(ctx, http.MethodGet, sandboxPath(name, "/stat")+fileQuery(p), nil, &fi)
	return fi, err
}

// TarOut streams a tar of a sandbox path.
func (c *Client) TarOut(ctx context.Context, name, p string) (io.ReadCloser, error) {
	return c.TarOutBeneath(ctx, name, "/", p)
}

// TarOutBeneath streams a tar of a sandbox path resolved beneath root: no symlink on the
// way may lead outside it.
func (c *Client) TarOutBeneath(ctx context.Context, name, root, p string) (io.ReadCloser, error) {
	resp, err := c.stream(ctx, http.MethodGet, sandboxPath(name, "/tar")+fileQuery(p)+"&root="+url.QueryEscape(root), nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// TarIn extracts a tar stream into a sandbox directory.
func (c *Client) TarIn(ctx context.Context, name, dir string, r io.Reader) error {
	return c.Do(ctx, http.MethodPut, sandboxPath(name, "/tar")+fileQuery(dir), r, nil)
}

func (c *Client) stream(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// Forward opens a connection to a TCP port on the sandbox's loopback, through the
// daemon and the guest's forward tunnel.
func (c *Client) Forward(ctx context.Context, name string, port int) (net.Conn, error) {
	ws, resp, err := websocket.Dial(ctx, c.WS+sandboxPath(name, "/forward")+"?port="+strconv.Itoa(port), &websocket.DialOptions{HTTPClient: c.HTTP})
	if err != nil {
		if resp != nil && resp.StatusCode >= 400 {
			return nil, decodeError(resp)
		}
		return nil, err
	}
	ws.SetReadLimit(-1)
	// The connection outlives the dial's context: it ends when closed.
	return websocket.NetConn(context.WithoutCancel(ctx), ws, websocket.MessageBinary), nil
}

// NetRules lists the rules that apply to a sandbox, or the global ones ("" sandbox).
func (c *Client) NetRules(ctx context.Context, sandboxName string) ([]wire.NetRule, error) {
	var out []wire.NetRule
	err := c.Do(ctx, http.MethodGet, "/v1/net/rules?sandbox="+url.QueryEscape(sandboxName), nil, &out)
	return out, err
}

// SetNetRule allows or denies a pattern.
func (c *Client) SetNetRule(ctx context.Context, req wire.NetRuleRequest) (wire.NetRule, error) {
	var out wire.NetRule
	body, _ := json.Marshal(req)
	err := c.Do(ctx, http.MethodPost, "/v1/net/rules", strings.NewReader(string(body)), &out)
	return out, err
}

// RemoveNetRule removes a user rule.
func (c *Client) RemoveNetRule(ctx context.Context, sandboxName, pattern string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/net/rules?sandbox="+url.QueryEscape(sandboxName)+"&pattern="+url.QueryEscape(pattern), nil, nil)
}

// Denials lists refused egress requests.
func (c *Client) Denials(ctx context.Context, sandboxName string, limit int) ([]wire.Denial, error) {
	var out []wire.Denial
	err := c.Do(ctx, http.MethodGet, "/v1/net/denials?sandbox="+url.QueryEscape(sandboxName)+"&limit="+strconv.Itoa(limit), nil, &out)
	return out, err
}

// AllowDenial turns a denial into an allow rule for its sandbox.
func (c *Client) AllowDenial(ctx context.Context, id int64) (wire.NetRule, error) {
	var out wire.NetRule
	err := c.Do(ctx, http.MethodPost, "/v1/net/denials/"+strconv.FormatInt(id, 10)+"/allow", nil, &out)
	return out, err
}

// StartNetLearning puts a sandbox in egress learn mode for d (an hour when 0).
func (c *Client) StartNetLearning(ctx context.Context, sandboxName string, d time.Duration) (wire.Learning, error) {
	req := wire.NetLearnRequest{Sandbox: sandboxName}
	if d != 0 {
		req.For = d.String()
	}
	return c.netLearning(ctx, req)
}

// StopNetLearning ends a sandbox's egress learn mode.
func (c *Client) StopNetLearning(ctx context.Context, sandboxName string) (wire.Learning, error) {
	return c.netLearning(ctx, wire.NetLearnRequest{Sandbox: sandboxName, Stop: true})
}

func (c *Client) netLearning(ctx context.Context, req wire.NetLearnRequest) (wire.Learning, error) {
	var out wire.Learning
	err := c.postJSON(ctx, "/v1/net/learning", req, &out)
	return out, err
}

// NetLearnings lists the sandboxes in egress learn mode now.
func (c *Client) NetLearnings(ctx context.Context) ([]wire.Learning, error) {
	var out []wire.Learning
	err := c.Do(ctx, http.MethodGet, "/v1/net/learning", nil, &out)
	return out, err
}

// NetProposal returns the allowlist a sandbox's learn mode proposes, as a diff against
// its rules; prune proposes removing its own allow rules never used.
func (c *Client) NetProposal(ctx context.Context, sandboxName string, prune bool) (wire.Proposal, error) {
	var out wire.Proposal
	q := "/v1/net/proposal?sandbox=" + url.QueryEscape(sandboxName)
	if prune {
		q += "&prune=1"
	}
	err := c.Do(ctx, http.MethodGet, q, nil, &out)
	return out, err
}

// ApplyNetProposal makes a sandbox's proposal its rules and returns what was applied.
func (c *Client) ApplyNetProposal(ctx context.Context, sandboxName string, prune bool) (wire.Proposal, error) {
	var out wire.Proposal
	err := c.postJSON(ctx, "/v1/net/proposal", wire.NetProposalRequest{Sandbox: sandboxName, Prune: prune}, &out)
	return out, err
}

func (c *Client) postJSON(ctx context.Context, path string, in, out any) error {
	body, _ := json.Marshal(in)
	return c.Do(ctx, http.MethodPost, path, strings.NewReader(string(body)), out)
}

// Sessions lists a sandbox's sessions with their live status.
func (c *Client) Sessions(ctx context.Context, sandboxName string) ([]wire.SessionInfo, error) {
	var out []wire.SessionInfo
	err := c.Do(ctx, http.MethodGet, sandboxPath(sandboxName, "/sessions"), nil, &out)
	return out, err
}

// AllSessions returns the sessions of every sandbox that has any, by sandbox name.
func (c *Client) AllSessions(ctx context.Context) (map[string][]wire.SessionInfo, error) {
	var out map[string][]wire.SessionInfo
	err := c.Do(ctx, http.MethodGet, "/v1/sessions", nil, &out)
	return out, err
}

// CreateSession starts a session, waiting up to wait for its agent's prompt.
func (c *Client) CreateSession(ctx context.Context, sandboxName string, req wire.SessionCreateRequest, wait time.Duration) (wire.SessionInfo, error) {
	var out wire.SessionInfo
	path := sandboxPath(sandboxName, "/sessions") + "?wait=" + strconv.Itoa(int(wait.Seconds()))
	err := c.postJSON(ctx, path, req, &out)
	return out, err
}

// RestartSession brings back a session whose process exited.
func (c *Client) RestartSession(ctx context.Context, sandboxName, name string) (wire.SessionInfo, error) {
	var out wire.SessionInfo
	err := c.postJSON(ctx, sessionPath(sandboxName, name, "/restart"), struct{}{}, &out)
	return out, err
}

// RenameSession renames a session.
func (c *Client) RenameSession(ctx context.Context, sandboxName, from, to string) error {
	return c.postJSON(ctx, sessionPath(sandboxName, from, "/rename"), wire.RenameRequest{To: to}, nil)
}

// SendToSession types text into a session's prompt.
func (c *Client) SendToSession(ctx context.Context, sandboxName, name, text string) error {
	return c.postJSON(ctx, sessionPath(sandboxName, name, "/send"), wire.SessionText{Text: text}, nil)
}

// Ask sends one message non-interactively and returns the agent's final answer.
func (c *Client) Ask(ctx context.Context, sandboxName, name, text string) (string, error) {
	var out wire.SessionText
	err := c.postJSON(ctx, sessionPath(sandboxName, name, "/ask"), wire.SessionText{Text: text}, &out)
	return out.Text, err
}

// RemoveSession ends and forgets a session.
func (c *Client) RemoveSession(ctx context.Context, sandboxName, name string) error {
	return c.Do(ctx, http.MethodDelete, sessionPath(sandboxName, name), nil, nil)
}

// Transcript returns a session's parsed conversation.
func (c *Client) Transcript(ctx context.Context, sandboxName, name string) ([]wire.TranscriptEntry, error) {
	var out []wire.TranscriptEntry
	err := c.Do(ctx, http.MethodGet, sessionPath(sandboxName, name, "/transcript"), nil, &out)
	return out, err
}

// ModTime returns a sandbox file's modification time.
func (c *Client) ModTime(ctx context.Context, name, p string) (time.Time, error) {
	fi, err := c.Stat(ctx, name, p)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, fi.MTime), nil
}

// RecordSync records what a sync fetched, in the daemon's state.
func (c *Client) RecordSync(ctx context.Context, sandboxName string, result any) error {
	return c.postJSON(ctx, sandboxPath(sandboxName, "/syncs"), result, nil)
}

// Syncs lists the recorded syncs of a sandbox.
func (c *Client) Syncs(ctx context.Context, sandboxName string) ([]wire.SyncRecord, error) {
	var out []wire.SyncRecord
	err := c.Do(ctx, http.MethodGet, sandboxPath(sandboxName, "/syncs"), nil, &out)
	return out, err
}

// SetSyncMode sets how a sandbox's work reaches its host repository.
func (c *Client) SetSyncMode(ctx context.Context, sandboxName, mode string) (wire.SandboxInfo, error) {
	var out wire.SandboxInfo
	body, _ := json.Marshal(wire.SyncModeRequest{Mode: mode})
	err := c.Do(ctx, http.MethodPut, sandboxPath(sandboxName, "/sync-mode"), strings.NewReader(string(body)), &out)
	return out, err
}

// BuildImage builds a sandbox image, reporting progress, and returns its tag.
func (c *Client) BuildImage(ctx context.Context, req wire.ImageBuildRequest, progress func(string)) (string, error) {
	body, _ := json.Marshal(req)
	resp, err := c.stream(ctx, http.MethodPost, "/v1/images/build", strings.NewReader(string(body)))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	last, err := readProgress(resp.Body, progress)
	return last.Step, err
}

// LoadImage copies a local image to a backend's nodes, reporting progress.
func (c *Client) LoadImage(ctx context.Context, req wire.ImageLoadRequest, progress func(string)) error {
	body, _ := json.Marshal(req)
	resp, err := c.stream(ctx, http.MethodPost, "/v1/images/load", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = readProgress(resp.Body, progress)
	return err
}

// Events streams events to fn, oldest first, until ctx is done, fn fails, or (with Until
// or NoFollow) the stored events are sent; then it returns nil, or fn's error. A stream
// the daemon cuts for falling behind is resumed after the last event delivered, so fn
// sees each event once.
func (c *Client) Events(ctx context.Context, q wire.EventsQuery, fn func(wire.Event) error) error {
	for {
		resume, err := c.events(ctx, q, fn)
		if err != nil || resume == "" {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		q.Since, q.Last = resume, 0
	}
}

// events runs one GET /v1/events; it returns the seq to resume after when the daemon cut
// the stream.
func (c *Client) events(ctx context.Context, q wire.EventsQuery, fn func(wire.Event) error) (string, error) {
	resp, err := c.stream(ctx, http.MethodGet, eventsPath(q), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var line wire.EventLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return "", fmt.Errorf("bad event line from the daemon: %q", sc.Text())
		}
		if line.Error != nil {
			if line.Error.Error.Kind == apperr.KindUnavailable && line.Seq > 0 {
				return strconv.FormatInt(line.Seq, 10), nil
			}
			return "", fromBody(*line.Error)
		}
		if err := fn(line.Event); err != nil {
			return "", err
		}
	}
	if err := sc.Err(); err != nil || ctx.Err() != nil {
		return "", err
	}
	if q.Until == "" && !q.NoFollow {
		return "", errors.New("the daemon ended the event stream: it has stopped, or restarted")
	}
	return "", nil
}

func sandboxPath(name string, rest ...string) string { return wire.SandboxPath(name, rest...) }

func decodeError(resp *http.Response) error { return wire.DecodeError(resp) }

func fromBody(b wire.ErrorBody) error { return b.Err() }

// readProgress reads an NDJSON progress stream, passing each step to progress, and
// returns its last (Done) line, or the error that line carries.
func readProgress(r io.Reader, progress func(string)) (wire.ProgressEvent, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20) // a last line may carry a bisect's diff
	for sc.Scan() {
		var ev wire.ProgressEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return ev, fmt.Errorf("bad progress line from the daemon: %q", sc.Text())
		}
		switch {
		case ev.Done && ev.Error != nil:
			return ev, fromBody(*ev.Error)
		case ev.Done:
			return ev, nil
		case ev.Step != "" && progress != nil:
			progress(ev.Step)
		}
	}
	if err := sc.Err(); err != nil {
		return wire.ProgressEvent{}, err
	}
	return wire.ProgressEvent{}, errors.New("the daemon ended the response before saying how the work ended: see its log")
}

func fileQuery(p string) string { return "?path=" + url.QueryEscape(p) }

func sessionPath(sandboxName, name string, rest ...string) string {
	return sandboxPath(sandboxName, "/sessions/"+url.PathEscape(name)) + strings.Join(rest, "")
}
