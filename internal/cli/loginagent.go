package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// runAgentLogin gives the daemon a subscription login (claude or codex), read on this
// machine: a pasted token, a token file, or the agent CLI's own credentials file.
func runAgentLogin(ctx context.Context, f *Factory, opts *loginOptions, name string) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	if opts.remove {
		if opts.tokenFile != "" || opts.file != "" || opts.fromHost {
			return usagef("--remove takes no login to give")
		}
		if _, err := c.RemoveLogin(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: the daemon holds no %s login now\n", name)
		return nil
	}
	req, from, err := agentLoginRequest(f, opts, name)
	if err != nil {
		return err
	}
	st, err := c.SetLogin(ctx, name, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: the daemon holds your %s login now (from %s)%s; sandboxes get a placeholder, never the token\n",
		name, from, loginExpiryWords(st))
	if name == wire.LoginCodex || (name == wire.LoginClaude && st.Refreshable) {
		fmt.Fprintf(f.IO.ErrOut, "paddock: the daemon refreshes it by itself; the refresh token it spends is the one %s on this host holds too, so sign in again there (or give paddock a login of its own) if it asks\n", name)
	}
	return nil
}

// agentLoginRequest reads what the login is made of, and says where it came from.
func agentLoginRequest(f *Factory, opts *loginOptions, name string) (wire.LoginRequest, string, error) {
	var req wire.LoginRequest
	if opts.tokenFile != "" && (opts.file != "" || opts.fromHost) || opts.file != "" && opts.fromHost {
		return req, "", usagef("give one of --token-file, --file and --from-host")
	}
	if name == wire.LoginCodex && opts.tokenFile != "" {
		return req, "", usagef("a Codex login is its auth.json: give it with --file, or let paddock read $CODEX_HOME/auth.json")
	}
	readFile := func(path string) (wire.LoginRequest, string, error) {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			hint := "sign in with `claude` and /login first, or give a token of `claude setup-token`"
			if name == wire.LoginCodex {
				hint = "sign in with `codex login` first"
			}
			return req, "", usagef("no %s (%s)", path, hint)
		}
		if err != nil {
			return req, "", err
		}
		return wire.LoginRequest{File: data}, path, nil
	}
	switch {
	case opts.file != "":
		return readFile(opts.file)
	case name == wire.LoginCodex:
		home := f.Getenv("CODEX_HOME")
		if home == "" {
			h, err := f.homeDir()
			if err != nil {
				return req, "", err
			}
			home = filepath.Join(h, ".codex")
		}
		return readFile(filepath.Join(home, "auth.json"))
	case opts.fromHost:
		dir := f.Getenv("CLAUDE_CONFIG_DIR")
		if dir == "" {
			h, err := f.homeDir()
			if err != nil {
				return req, "", err
			}
			dir = filepath.Join(h, ".claude")
		}
		return readFile(filepath.Join(dir, ".credentials.json"))
	case opts.tokenFile == "-" || opts.tokenFile == "" && !isTerminal(f.IO.In):
		data, err := io.ReadAll(io.LimitReader(f.IO.In, 64<<10))
		if err != nil {
			return req, "", err
		}
		req.Token = lastLine(string(data))
		if req.Token == "" {
			return req, "", usagef("no token on stdin: pipe in the token `claude setup-token` printed")
		}
		return req, "the token given", nil
	case opts.tokenFile != "":
		data, err := os.ReadFile(opts.tokenFile)
		if err != nil {
			return req, "", err
		}
		req.Token = lastLine(string(data))
		return req, opts.tokenFile, nil
	}
	fmt.Fprintln(f.IO.ErrOut, "Run `claude setup-token` (it signs in with your Claude subscription and prints a long-lived token), then paste the token here.")
	token, err := askSecret(f, "Claude token (not shown): ")
	if err != nil {
		return req, "", err
	}
	if token == "" {
		return req, "", usagef("no token given: run `claude setup-token`, then `paddock login claude`; or `paddock login claude --from-host`")
	}
	req.Token = token
	return req, "the token given", nil
}

// lastLine is the last line of text that is not empty, trimmed: `claude setup-token`
// prints its token last.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// loginExpiryWords says when a login's token expires, for people.
func loginExpiryWords(st wire.LoginStatus) string {
	if st.ExpiresAt.IsZero() {
		return ""
	}
	return fmt.Sprintf(", its token valid until %s", st.ExpiresAt.Local().Format(time.DateTime))
}
