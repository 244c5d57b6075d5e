package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/termtext"
)

type chatOptions struct {
	target         string
	newName        string
	agent          string
	list           bool
	json           bool
	rename         string
	renameTo       string
	remove         bool
	fork           string
	nonInteractive bool
	message        string
	command        string
	worktree       string
}

func newCmdChat(f *Factory) *cobra.Command {
	opts := &chatOptions{}
	cmd := &cobra.Command{
		Use:   "chat [SANDBOX[/SESSION]]",
		Short: "Talk to an agent: attach to a session, start one, or ask it one question",
		Long: `Talk to the agents in a sandbox. Each session is one conversation, in its own tmux
session inside the sandbox; detaching (Ctrl-b d) leaves it running.

  paddock chat myrepo/fix-auth-bug                     attach
  paddock chat myrepo --new fix-auth-bug --agent codex start a session (and attach)
  echo "go on" | paddock chat myrepo/fix-auth-bug      piped input becomes the next prompt
  echo "status?" | paddock chat myrepo/fix-auth-bug --non-interactive   typed into the session; its answer on stdout
  paddock chat myrepo --list                           NAME AGENT STATUS MESSAGES LAST-ACTIVITY COST
  paddock chat myrepo --rename fix-auth-bug auth-v2
  paddock chat myrepo/fix-auth-bug --rm                end the session
  paddock chat myrepo/fix-auth-bug --fork try-b        a new session on a copy of its conversation

Without SANDBOX, the current directory's project must have exactly one sandbox; without
/SESSION, the sandbox must have exactly one session.`,
		Args: maxArgs(2, "SANDBOX[/SESSION] and at most one more argument"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.rename != "" {
				// paddock chat [SANDBOX] --rename OLD NEW
				if len(args) == 0 {
					return usagef("--rename takes the old name and the new: paddock chat SANDBOX --rename OLD NEW")
				}
				opts.renameTo, args = args[len(args)-1], args[:len(args)-1]
			}
			if len(args) > 1 {
				return usagef("chat takes one SANDBOX[/SESSION]")
			}
			if len(args) == 1 {
				opts.target = args[0]
			}
			if opts.fork != "" && (opts.newName != "" || opts.list || opts.rename != "" || opts.remove) {
				return usagef("--fork NEW goes alone: paddock chat SANDBOX/SESSION --fork NEW")
			}
			if opts.remove && (opts.list || opts.rename != "" || opts.newName != "" || opts.nonInteractive) {
				return usagef("--rm goes alone: paddock chat SANDBOX/SESSION --rm")
			}
			return runChat(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.newName, "new", "", "start a new session with this name")
	cmd.Flags().StringVar(&opts.agent, "agent", "", "the new session's agent: claude, codex, gemini, goose, aider, opencode, shell (default: the sandbox's agent, else claude)")
	cmd.Flags().StringVar(&opts.command, "command", "", "the command a shell session runs (default: a login shell)")
	cmd.Flags().StringVar(&opts.worktree, "worktree", "", "the new session works in the worktree of this `BRANCH` ('paddock worktree add' makes one)")
	cmd.Flags().BoolVar(&opts.list, "list", false, "list the sandbox's sessions")
	cmd.Flags().BoolVar(&opts.json, "json", false, "with --list: print JSON")
	cmd.Flags().StringVar(&opts.rename, "rename", "", "rename a session: --rename OLD NEW")
	cmd.Flags().StringVar(&opts.fork, "fork", "", "start session NEW continuing a copy of SANDBOX/SESSION's conversation (Claude Code); the original goes on unchanged")
	cmd.Flags().BoolVar(&opts.remove, "rm", false, "end the session SANDBOX/SESSION: its agent's process ends; its transcript stays in the sandbox")
	cmd.Flags().BoolVar(&opts.nonInteractive, "non-interactive", false, "type stdin (or -m) into the session as one message, wait for the turn to end, print the agent's final answer (exit 4 when it is busy; a sandbox with no session gets one)")
	cmd.Flags().StringVarP(&opts.message, "message", "m", "", "the message to send, instead of stdin")
	return cmd
}

func runChat(ctx context.Context, f *Factory, opts *chatOptions) error {
	if opts.nonInteractive {
		f.NonInteractive = true // chat's own --non-interactive asks nothing either
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	switch {
	case opts.list:
		sb, _, err := resolveTarget(ctx, f, c, opts.target, false)
		if err != nil {
			return err
		}
		list, err := c.Sessions(ctx, sb)
		if err != nil {
			return err
		}
		if opts.json {
			return writeJSON(f, list)
		}
		printSessions(f.IO.Out, list)
		return nil
	case opts.remove:
		sb, name, err := resolveTarget(ctx, f, c, opts.target, true)
		if err != nil {
			return err
		}
		if err := c.RemoveSession(ctx, sb, name); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: ended %s/%s\n", sb, name)
		return nil
	case opts.rename != "":
		sb, _, err := resolveTarget(ctx, f, c, opts.target, false)
		if err != nil {
			return err
		}
		if err := c.RenameSession(ctx, sb, opts.rename, opts.renameTo); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: renamed %s/%s to %s/%s\n", sb, opts.rename, sb, opts.renameTo)
		return nil
	}

	var sb, name string
	if opts.nonInteractive && opts.newName == "" && opts.fork == "" {
		// A question to a sandbox with no session starts one to take it.
		if opts.newName, err = firstSessionFor(ctx, f, c, opts); err != nil {
			return err
		}
	}
	if opts.fork != "" {
		from := ""
		if sb, from, err = resolveTarget(ctx, f, c, opts.target, true); err != nil {
			return err
		}
		name = opts.fork
		fmt.Fprintf(f.IO.ErrOut, "paddock: forking %s/%s into %s/%s\n", sb, from, sb, name)
		info, err := c.CreateSession(ctx, sb, wire.SessionCreateRequest{Name: name, ForkOf: from}, 60*time.Second)
		if err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: session %s/%s is %s\n", sb, name, info.Status)
	} else if opts.newName != "" {
		if sb, _, err = resolveTarget(ctx, f, c, opts.target, false); err != nil {
			return err
		}
		if err := wake(ctx, f, c, sb, ""); err != nil {
			return err
		}
		name = opts.newName
		if opts.agent == "" {
			if opts.agent, err = chooseAgent(ctx, f, c, sb, name); err != nil {
				return err
			}
		}
		if err := ensureKey(ctx, f, c, opts.agent); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: starting %s in %s/%s\n", opts.agent, sb, name)
		info, err := c.CreateSession(ctx, sb, wire.SessionCreateRequest{Name: name, Agent: opts.agent, Command: opts.command, Worktree: opts.worktree}, 60*time.Second)
		if err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: session %s/%s is %s\n", sb, name, info.Status)
	} else if sb, name, err = resolveTarget(ctx, f, c, opts.target, true); err != nil {
		return err
	} else if err := wake(ctx, f, c, sb, name); err != nil {
		return err
	}

	message := opts.message
	interactive := isTerminal(f.IO.In)
	if message == "" && !interactive {
		data, err := io.ReadAll(f.IO.In)
		if err != nil {
			return err
		}
		message = strings.TrimSpace(string(data))
	}
	if opts.nonInteractive {
		if message == "" {
			return usagef("--non-interactive needs a message on stdin or with -m")
		}
		answer, err := c.Ask(ctx, sb, name, message)
		if err != nil {
			return err
		}
		if isTerminal(f.IO.Out) {
			answer = termtext.Escape(answer) // the agent's text, not a way to drive the terminal
		}
		fmt.Fprintln(f.IO.Out, answer)
		return nil
	}
	if message != "" {
		if err := c.SendToSession(ctx, sb, name, message); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: sent to %s/%s\n", sb, name)
	}
	if !interactive {
		if message == "" && opts.newName == "" && opts.fork == "" {
			return usagef("chat attaches a terminal: run it in one, or pipe a message in")
		}
		return nil
	}
	return attachSession(ctx, f, sb, name)
}

// firstSessionFor is the name of the session `chat SANDBOX --non-interactive` starts
// when the sandbox has none (named after its agent, which it sets in opts), "" when it
// has sessions or one is named.
func firstSessionFor(ctx context.Context, f *Factory, c *client.Client, opts *chatOptions) (string, error) {
	if strings.Contains(opts.target, "/") {
		return "", nil
	}
	sb, _, err := resolveTarget(ctx, f, c, opts.target, false)
	if err != nil {
		return "", err
	}
	if list, err := c.Sessions(ctx, sb); err != nil || len(list) > 0 {
		return "", err
	}
	if opts.agent == "" {
		if opts.agent, err = chooseAgent(ctx, f, c, sb, "NAME"); err != nil {
			return "", err
		}
	}
	return opts.agent, nil
}

func isTerminal(s any) bool {
	file, ok := s.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

func printSessions(w io.Writer, list []wire.SessionInfo) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tAGENT\tSTATUS\tMESSAGES\tLAST ACTIVITY\tCOST")
	for _, s := range list {
		last := "-"
		if !s.LastActivity.IsZero() {
			last = age(time.Since(s.LastActivity)) + " ago"
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%d\t%s\t%s\n", s.Sandbox, s.Name, s.Agent, s.Status, s.Messages, last, wire.CostText(s.Usage))
	}
	tw.Flush()
}
