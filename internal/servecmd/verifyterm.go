package servecmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/backend/conform"
)

// verifyEscPlant writes, inside the sandbox, text carrying terminal escapes where the
// host's listings show it: a commit's subject, a file's name, and a host name asked of
// the egress proxy whose 52-hex label would raise an alarm (the proxy answers such a
// name 400 and records nothing, so net denials and alarms get none of it; git refuses
// ESC in a branch name). Each holds the word pwned, so a listing that shows it is known
// to.
const verifyEscPlant = `set -e
printf 'x\n' > "$(printf 'esc-\033]0;pwned\007-\033[2J.txt')"
git add -A && git -c user.name=v -c user.email=v@paddock.invalid commit -q -m "$(printf 'pwned \033]0;pwned\007 \033[2J')"
p=${HTTPS_PROXY#http://}; p=${p%/}
printf 'CONNECT 4a6f686e20446f652070617373776f72643a2068756e74657232.pwned\033]0;pwned\007\033[2J.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n' > /tmp/paddock-verify-connect
curl -s -m 3 "telnet://$p" < /tmp/paddock-verify-connect > /dev/null 2>&1 || true
echo planted`

// checkTerminalEscapes: text the sandbox controls, carrying ESC sequences, shows
// neutralised in the listings the installed paddock prints of it: no ESC (nor C1 CSI)
// byte reaches stdout or stderr.
func checkTerminalEscapes(ctx context.Context, d *verifyDaemon) (conform.Status, string, []string) {
	self, err := os.Executable()
	if err != nil || !strings.HasPrefix(filepath.Base(self), "paddock") {
		return conform.NotApplicable, "not run from an installed paddock, whose listings this check reads", nil
	}
	if out, err := d.inside(ctx, verifyEscPlant); err != nil || !strings.Contains(out, "planted") {
		return conform.Fail, "plant escape sequences in the sandbox: " + firstLine(out), nil
	}
	var fails, notes []string
	for _, args := range [][]string{{"ls"}, {"diff", "repo", "--stat"}, {"net", "denials"}, {"alarms"}, {"audit", "repo"}} {
		// The alarm and denial are raised as the proxy answers: give them a moment.
		var out []byte
		tries := 1
		if args[0] == "net" || args[0] == "alarms" {
			tries = 5
		}
		for try := 0; try < tries; try++ {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			cmd := exec.CommandContext(cctx, self, args...)
			cmd.Env = append(os.Environ(), "PADDOCK_HOME="+d.paths.Home)
			out, err = cmd.CombinedOutput()
			cancel()
			if bytes.Contains(out, []byte("pwned")) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		name := "paddock " + strings.Join(args, " ")
		if err != nil {
			fails = append(fails, fmt.Sprintf("%s: %v: %s", name, err, firstLine(string(out))))
			continue
		}
		if i := bytes.IndexAny(out, "\x1b\x9b"); i >= 0 {
			fails = append(fails, fmt.Sprintf("%s printed a raw escape byte (0x%x) at %d", name, out[i], i))
		}
		shows := "shows no sandbox text"
		if bytes.Contains(out, []byte("pwned")) {
			shows = "shows the sandbox's text, escaped"
		}
		notes = append(notes, name+": "+shows)
	}
	if len(fails) > 0 {
		return conform.Fail, strings.Join(fails, "\n"), notes
	}
	return conform.Pass, "", notes
}
