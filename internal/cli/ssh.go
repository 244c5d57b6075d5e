package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/shell"
	"github.com/paddockhq/paddock/internal/sshgate"
	"github.com/paddockhq/paddock/internal/stdioconn"
	"github.com/paddockhq/paddock/internal/termtext"
)

// sshHostAlias is the name the gate's host key is known under, for every sandbox: the
// key is this machine's, the transport ends in the ProxyCommand.
const sshHostAlias = "paddock-sandbox"

func sshKeyPath(p config.Paths) string        { return filepath.Join(p.State, "ssh_host_ed25519_key") }
func sshKnownHostsPath(p config.Paths) string { return filepath.Join(p.State, "ssh_known_hosts") }

func newCmdSSH(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ssh SANDBOX [-- COMMAND...]",
		Short: "OpenSSH into a sandbox, with no sshd inside it (see ssh-config for VS Code Remote-SSH)",
		Long: `Run the system's ssh client into a sandbox: a shell in /workspace, or COMMAND. The SSH
connection ends in paddock itself (as ssh's ProxyCommand), which runs the shell through the daemon,
so the sandbox needs no sshd and no network. ssh's -L forwards reach the sandbox's own ports.
A login lists the sandbox's sessions and how to attach to them.`,
		Args: minArgs(1, "a sandbox"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ssh, err := exec.LookPath("ssh")
			if err != nil {
				return fmt.Errorf("no ssh client here: apt-get install openssh-client (or use `paddock shell %s`)", args[0])
			}
			p, err := f.Paths()
			if err != nil {
				return err
			}
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			if _, err := c.Get(cmd.Context(), args[0]); err != nil {
				return err
			}
			conf, err := sshConfig(f, p, []string{args[0]})
			if err != nil {
				return err
			}
			file := filepath.Join(p.State, "ssh_config")
			if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
				return err
			}
			argv := append([]string{"-F", file, args[0] + ".paddock"}, args[1:]...)
			run := exec.CommandContext(cmd.Context(), ssh, argv...)
			run.Stdin, run.Stdout, run.Stderr = f.IO.In, f.IO.Out, f.IO.ErrOut
			if err := run.Run(); err != nil {
				if ee, ok := err.(*exec.ExitError); ok {
					return &exitError{code: ee.ExitCode()}
				}
				return err
			}
			return nil
		},
	}
	return cmd
}

func newCmdSSHConfig(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "ssh-config [SANDBOX...]",
		Short: "Print OpenSSH Host blocks for sandboxes (append them to ~/.ssh/config: ssh NAME.paddock)",
		Long: `Print an OpenSSH configuration with a Host NAME.paddock block for each sandbox (all of them
without arguments), whose ProxyCommand runs paddock: OpenSSH, scp, sftp (where the sandbox has an
sftp-server) and VS Code Remote-SSH then reach the sandbox with no sshd in it.

  paddock ssh-config >> ~/.ssh/config && ssh myrepo.paddock`,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := f.Paths()
			if err != nil {
				return err
			}
			names := args
			if len(names) == 0 {
				c, err := f.Client(cmd.Context())
				if err != nil {
					return err
				}
				list, err := c.List(cmd.Context())
				if err != nil {
					return err
				}
				for _, sb := range list {
					names = append(names, sb.Name)
				}
			}
			conf, err := sshConfig(f, p, names)
			if err != nil {
				return err
			}
			_, err = io.WriteString(f.IO.Out, conf)
			return err
		},
	}
}

// sshConfig is the OpenSSH configuration reaching each named sandbox through the gate;
// it makes the gate's host key, and the known_hosts file trusting it, if missing.
func sshConfig(f *Factory, p config.Paths, names []string) (string, error) {
	key, err := sshgate.HostKey(sshKeyPath(p))
	if err != nil {
		return "", fmt.Errorf("the ssh gate's host key: %w", err)
	}
	if err := os.WriteFile(sshKnownHostsPath(p), []byte(sshgate.KnownHostsLine(sshHostAlias, key.PublicKey())+"\n"), 0o600); err != nil {
		return "", err
	}
	exe, err := f.Executable()
	if err != nil {
		return "", err
	}
	proxy := shell.Word(exe)
	if p.Home != "" {
		proxy = "env PADDOCK_HOME=" + shell.Word(p.Home) + " " + proxy
	}
	if f.Context != "" {
		proxy += " --context " + shell.Word(f.Context)
	}
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "Host %s.paddock\n  User agent\n  ProxyCommand %s ssh-proxy %s\n  HostKeyAlias %s\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n  ForwardAgent no\n  ForwardX11 no\n  LogLevel ERROR\n\n",
			name, proxy, shell.Word(name), sshHostAlias, sshKnownHostsPath(p))
	}
	return b.String(), nil
}

func newCmdSSHProxy(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:    "ssh-proxy SANDBOX",
		Short:  "Serve SSH on stdin and stdout for one sandbox (ssh's ProxyCommand; see ssh-config)",
		Hidden: true,
		Args:   exactArgs(1, "a sandbox"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := f.Paths()
			if err != nil {
				return err
			}
			key, err := sshgate.HostKey(sshKeyPath(p))
			if err != nil {
				return err
			}
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			if _, err := c.Get(cmd.Context(), args[0]); err != nil {
				return err
			}
			return sshgate.Serve(cmd.Context(), stdioconn.New(f.IO.In, f.IO.Out), key, &sshSandbox{c: c, name: args[0]})
		},
	}
}

// sshSandbox reaches a sandbox for the gate, through the daemon's API.
type sshSandbox struct {
	c    *client.Client
	name string
}

func (s *sshSandbox) Exec(ctx context.Context, e sshgate.Exec, stdin io.Reader, stdout, stderr io.Writer, resize <-chan [2]uint16) (int, error) {
	return s.c.Exec(ctx, s.name, wire.ExecRequest{Argv: e.Argv, Env: e.Env, TTY: e.TTY, Rows: e.Rows, Cols: e.Cols},
		wire.ExecIO{Stdin: stdin, Stdout: stdout, Stderr: stderr, Resize: resize})
}

func (s *sshSandbox) Forward(ctx context.Context, port int) (net.Conn, error) {
	return s.c.Forward(ctx, s.name, port)
}

func (s *sshSandbox) Banner(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := s.c.Sessions(ctx, s.name)
	if err != nil || len(list) == 0 {
		return fmt.Sprintf("paddock: sandbox %s, no agent sessions (start one: paddock chat %s --new NAME)\n", s.name, s.name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "paddock: sandbox %s, sessions:\n", s.name)
	for _, si := range list {
		// The status comes from hooks inside the sandbox: shown, never sent as it is.
		fmt.Fprintf(&b, "  %-12s %-8s %s\n", si.Name, si.Agent, termtext.Escape(si.Status))
	}
	fmt.Fprintf(&b, "attach here: tmux -S %s attach -t %s   (or from your machine: paddock attach %s/%s)\n", wire.SessionSocket, list[0].Name, s.name, list[0].Name)
	return b.String()
}
