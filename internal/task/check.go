package task

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/tailbuf"
)

// CheckTimeout bounds one check command's run.
const CheckTimeout = 10 * time.Minute

// checkOutputKept is how much of the end of a check's output is kept.
const checkOutputKept = 2048

// runChecks runs each check in /workspace of a sandbox, in order, each to its end
// whatever the one before did (the user reads every result), and says whether all
// passed. An error is the sandbox not answering: no result is then recorded.
func (s *Service) runChecks(ctx context.Context, sandboxName string, checks []string) ([]wire.CheckResult, bool, error) {
	c, err := s.opts.Sandboxes.Client(ctx, sandboxName)
	if err != nil {
		return nil, false, err
	}
	return runChecksOn(ctx, c, checks)
}

// runChecksOn is runChecks on a guest connection.
func runChecksOn(ctx context.Context, c *guestclient.Client, checks []string) ([]wire.CheckResult, bool, error) {
	passed := true
	out := make([]wire.CheckResult, 0, len(checks))
	for _, cmd := range checks {
		r, err := runCheck(ctx, c, cmd)
		if err != nil {
			return nil, false, err
		}
		passed = passed && r.Exit == 0
		out = append(out, r)
	}
	return out, passed, nil
}

func runCheck(ctx context.Context, c *guestclient.Client, cmd string) (wire.CheckResult, error) {
	cctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	buf := &tailbuf.Buffer{Max: checkOutputKept}
	start := time.Now()
	code, err := c.Exec(cctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", cmd}, Dir: inside.Workspace, Stdout: buf, Stderr: buf})
	r := wire.CheckResult{Command: cmd, Exit: code, Millis: time.Since(start).Milliseconds(), At: start}
	var startErr *guestclient.ExecStartError
	switch {
	case errors.As(err, &startErr):
		r.Exit = 127
		fmt.Fprintf(buf, "%v\n", err)
	case err != nil && cctx.Err() != nil && ctx.Err() == nil:
		r.Exit = 124
		fmt.Fprintf(buf, "paddock: the check ran longer than %v and was stopped\n", CheckTimeout)
	case err != nil:
		return r, err
	}
	r.Output = buf.String()
	return r, nil
}
