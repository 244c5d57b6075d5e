package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/limitbuf"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/transcript"
)

// readTranscript reads and parses a session's transcript; ok is false when the agent has
// none paddock can read (yet), or (for a listing, cheap) none it can read cheaply.
func (s *Service) readTranscript(ctx context.Context, c *guestclient.Client, sb store.Sandbox, se store.Session, cheap bool) ([]transcript.Entry, bool, error) {
	a, err := agents.Get(se.Agent)
	if err != nil {
		return nil, false, nil
	}
	t := &target{sb: sb, se: se}
	entries, ok, err := agentTranscript(ctx, c, a, t.session(), cheap)
	if ok && err == nil {
		s.scanTranscript(ctx, sb, se, entries)
	}
	return entries, ok, err
}

// maxTranscript is the most of a transcript read, from its file or its command: a long
// conversation's is tens of MiB. One larger is an error, not the part that fits.
const maxTranscript = 256 << 20

// agentTranscript is readTranscript for agent a and session sess.
func agentTranscript(ctx context.Context, c *guestclient.Client, a *agents.Agent, sess agents.Session, cheap bool) ([]transcript.Entry, bool, error) {
	if argv := a.TranscriptArgv(sess); argv != nil {
		if cheap {
			return nil, false, nil
		}
		return commandTranscript(ctx, c, a, sess, argv)
	}
	p := a.TranscriptPath(sess)
	if strings.ContainsAny(p, "*?[") {
		p = newestMatch(ctx, c, p)
	}
	if p == "" || !(strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".json")) {
		return nil, false, nil
	}
	data, err := readFile(ctx, c, p, maxTranscript)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("read the transcript: %w", err)
	}
	entries, err := a.Parse(bytes.NewReader(data))
	return entries, true, err
}

// newestMatch finds the newest file matching a transcript's glob inside the sandbox.
func newestMatch(ctx context.Context, c *guestclient.Client, pattern string) string {
	out, _, err := run(ctx, c, "sh", "-c", `ls -td -- $1 2>/dev/null | head -1`, "sh", pattern)
	if err != nil {
		return ""
	}
	if p := strings.TrimSpace(out); p != pattern {
		return p
	}
	return ""
}

// summarize fills the message count and last activity from the transcript.
func (s *Service) summarize(ctx context.Context, c *guestclient.Client, sb store.Sandbox, se store.Session, in *Info) {
	entries, ok, err := s.readTranscript(ctx, c, sb, se, true)
	if err != nil {
		s.log.Warn("read transcript", "sandbox", sb.Name, "session", se.Name, "err", err)
		return
	}
	if !ok {
		return
	}
	sum := transcript.Summarize(entries)
	in.Messages, in.LastActivity = sum.Messages, sum.LastActivity
}

// Transcript returns a session's conversation in paddock's schema.
func (s *Service) Transcript(ctx context.Context, sandboxName, name string) ([]transcript.Entry, error) {
	t, err := s.resolve(ctx, sandboxName, name)
	if err != nil {
		return nil, err
	}
	entries, ok, err := s.readTranscript(ctx, t.client, t.sb, t.se, false)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apperr.NotFound("", "session %q has no transcript paddock can read (agent %s)", name, t.se.Agent)
	}
	return entries, nil
}

// commandTranscript runs an agent's transcript command and parses what it prints. It
// runs without PADDOCK_SESSION, so that the agent's hooks, should they run, report
// nothing for the session.
func commandTranscript(ctx context.Context, c *guestclient.Client, a *agents.Agent, sess agents.Session, argv []string) ([]transcript.Entry, bool, error) {
	name := strings.Join(argv[:min(2, len(argv))], " ")
	stdout, stderr, code, err := c.Output(ctx, guestclient.ExecOptions{Argv: argv, Env: a.Env, Dir: sess.Dir}, maxTranscript)
	var tooLarge *limitbuf.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return nil, false, fmt.Errorf("the transcript %s prints is too large: %w", name, tooLarge)
	case err != nil:
		return nil, false, err
	case code != 0:
		return nil, false, fmt.Errorf("%s exited %d: %s", name, code, strings.TrimSpace(tailOf(stderr)))
	}
	entries, err := a.Parse(strings.NewReader(stdout))
	return entries, true, err
}
