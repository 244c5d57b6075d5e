package vagrant

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// cli runs the vagrant command for one machine: in its directory (the one holding its
// Vagrantfile), with its state directory (VAGRANT_DOTFILE_PATH) and provider.
type cli struct {
	bin      string
	provider string
	// env is added to vagrant's environment.
	env []string
}

// machineDir is where vagrant runs for a sandbox: the directory of its Vagrantfile, and
// where the machine's state lives.
type machineDir struct {
	// cwd holds the Vagrantfile; dotfile is vagrant's state directory for the machine.
	cwd, dotfile string
}

// run runs vagrant ARGS and returns its output; a failure carries the end of what it said.
func (c *cli) run(ctx context.Context, m machineDir, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = m.cwd
	cmd.Env = append(os.Environ(), "VAGRANT_DOTFILE_PATH="+m.dotfile, "VAGRANT_CHECKPOINT_DISABLE=1", "VAGRANT_NO_COLOR=1")
	if c.provider != "" {
		cmd.Env = append(cmd.Env, "VAGRANT_DEFAULT_PROVIDER="+c.provider)
	}
	cmd.Env = append(cmd.Env, c.env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("vagrant %s: %v: %s", strings.Join(args, " "), err, tail(errOut.String()+out.String(), 6))
	}
	return out.String(), nil
}

// tail is the last n non-empty lines of s.
func tail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

// machineState is a VM's state as `vagrant status --machine-readable` reports it:
// running, saved, poweroff, aborted, not_created, or a provider's own (docker: stopped;
// libvirt: shutoff).
type machineState struct {
	State    string
	Provider string
}

// parseStatus reads `vagrant status --machine-readable`: lines of
// "timestamp,target,type,data..." where data escapes commas as %!(VAGRANT_COMMA) and
// newlines as \n. It reports the first machine's state.
func parseStatus(out string) (machineState, error) {
	var st machineState
	target := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ",", 4)
		if len(f) < 4 || f[1] == "" {
			continue
		}
		if _, err := strconv.ParseInt(f[0], 10, 64); err != nil {
			continue
		}
		if target == "" {
			target = f[1]
		}
		if f[1] != target {
			continue // a multi-machine Vagrantfile: paddock uses its first machine
		}
		data := strings.ReplaceAll(f[3], "%!(VAGRANT_COMMA)", ",")
		switch f[2] {
		case "state":
			st.State = data
		case "provider-name":
			st.Provider = data
		}
	}
	if st.State == "" {
		return st, fmt.Errorf("vagrant status said no machine state: %s", tail(out, 3))
	}
	return st, nil
}

// sshConfig is what `vagrant ssh-config` says of how to reach the machine.
type sshConfig struct {
	Host, User string
	Port       int
	Keys       []string
}

// parseSSHConfig reads the first Host block of `vagrant ssh-config`.
func parseSSHConfig(out string) (sshConfig, error) {
	c := sshConfig{Port: 22}
	hosts := 0
	for _, line := range strings.Split(out, "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		val = strings.Trim(strings.TrimSpace(val), `"`)
		switch strings.ToLower(key) {
		case "host":
			hosts++
		case "hostname":
			if hosts == 1 {
				c.Host = val
			}
		case "user":
			if hosts == 1 {
				c.User = val
			}
		case "port":
			if hosts == 1 {
				p, err := strconv.Atoi(val)
				if err != nil {
					return c, fmt.Errorf("vagrant ssh-config: port %q", val)
				}
				c.Port = p
			}
		case "identityfile":
			if hosts == 1 {
				c.Keys = append(c.Keys, val)
			}
		}
	}
	if c.Host == "" || c.User == "" || len(c.Keys) == 0 {
		return c, fmt.Errorf("vagrant ssh-config named no host, user or key: %s", tail(out, 4))
	}
	return c, nil
}
