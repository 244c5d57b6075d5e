package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/termtext"
)

func newCmdAttach(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "attach [SANDBOX]",
		Short: "Attach to a sandbox's sessions in tmux (Ctrl-b d detaches, Ctrl-b Ctrl-b d inside your own tmux; they keep running)",
		Args:  maxArgs(1, "at most one sandbox"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			c, sb, name, err := clientAndTarget(ctx, f, arg, false)
			if err != nil {
				return err
			}
			if err := wake(ctx, f, c, sb, name); err != nil {
				return err
			}
			return attachSession(ctx, f, sb, name)
		},
	}
}

// clientAndTarget connects to the daemon and resolves SANDBOX[/SESSION].
func clientAndTarget(ctx context.Context, f *Factory, arg string, needSession bool) (*client.Client, string, string, error) {
	c, err := f.Client(ctx)
	if err != nil {
		return nil, "", "", err
	}
	sb, name, err := resolveTarget(ctx, f, c, arg, needSession)
	return c, sb, name, err
}

func newCmdRestart(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "restart SANDBOX/SESSION",
		Short: "Bring back a session whose process exited, resuming its conversation",
		Args:  exactArgs(1, "one SANDBOX/SESSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, sb, name, err := clientAndTarget(ctx, f, args[0], true)
			if err != nil {
				return err
			}
			// State-aware: a sandbox that is not running (stopped, a VM suspended, powered
			// off or crashed) is brought back first, its backend choosing how.
			started := false
			if sbInfo, err := c.Get(ctx, sb); err == nil && sbInfo.State != "running" {
				why := sbInfo.State
				if sbInfo.Detail != "" {
					why += ": " + termtext.Escape(sbInfo.Detail)
				}
				fmt.Fprintf(f.IO.ErrOut, "paddock: %s is %s; starting it\n", sb, why)
				if _, err := c.Start(ctx, sb); err != nil {
					return err
				}
				started = true
			}
			info, err := c.RestartSession(ctx, sb, name)
			if started && apperr.KindOf(err) == apperr.KindConflict {
				// Its process came back with the machine (a VM resumed from suspension).
				fmt.Fprintf(f.IO.ErrOut, "paddock: session %s/%s is running\n", sb, name)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: session %s/%s is %s\n", sb, name, info.Status)
			return nil
		},
	}
}

func newCmdTranscript(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "transcript SANDBOX/SESSION",
		Short: "Print a session's conversation: prompts, answers, tool calls and results",
		Args:  exactArgs(1, "one SANDBOX/SESSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, sb, name, err := clientAndTarget(ctx, f, args[0], true)
			if err != nil {
				return err
			}
			entries, err := c.Transcript(ctx, sb, name)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f, entries)
			}
			for _, e := range entries {
				text := e.Text
				switch e.Kind {
				case "tool_call":
					text = e.Tool + " " + e.InputText()
				case "tool_result":
					text = e.Output
				case "file_change":
					text = e.Path
				}
				// The text is the sandbox's: shown, never obeyed by the terminal.
				text = termtext.Escape(strings.TrimSpace(text))
				fmt.Fprintf(f.IO.Out, "%-11s %s\n", e.Kind, strings.ReplaceAll(text, "\n", "\n            "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// wake starts a sandbox that was stopped (after an idle stop, say) or suspended, and
// resumes the session asked for (every session, with none named) whose process went
// with it, saying so: chat and attach then find the work as it was.
func wake(ctx context.Context, f *Factory, c *client.Client, sb, name string) error {
	info, err := c.Get(ctx, sb)
	if err != nil || (info.State != "stopped" && info.State != "suspended") {
		return err
	}
	if info.State == "suspended" {
		fmt.Fprintf(f.IO.ErrOut, "paddock: %s was suspended; resuming it\n", sb)
	} else {
		fmt.Fprintf(f.IO.ErrOut, "paddock: %s was stopped; starting it again\n", sb)
	}
	started, err := c.Start(ctx, sb)
	if err != nil {
		return err
	}
	// The daemon resumes the sessions the stop found running; one that had ended is
	// resumed here when it is the one asked for.
	for _, s := range started.Resumed {
		fmt.Fprintf(f.IO.ErrOut, "paddock: resumed session %s/%s\n", sb, termtext.Escape(s))
	}
	list, err := c.Sessions(ctx, sb)
	if err != nil {
		return err
	}
	for _, se := range list {
		if (name == "" || se.Name == name) && se.Status == "exited" {
			if _, err := c.RestartSession(ctx, sb, se.Name); err != nil {
				return fmt.Errorf("resume %s/%s: %w", sb, se.Name, err)
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: resumed session %s/%s\n", sb, se.Name)
		}
	}
	return nil
}
