package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newCmdNotify(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Where notifications go when a session waits for you or finishes: list, test, remove",
		Long: `The daemon tells you when a session starts waiting for you, finishes its turn or exits: through
the webhook of the config's [notify] section (ntfy, Slack or JSON bodies), and through Web Push to
every browser that pressed "Notify me" in the web UI (paddock web).

  [notify]
  webhook = "https://ntfy.sh/my-paddock"      # format = "ntfy" | "slack" | "json"
  headers = { Authorization = "Bearer ${NTFY_TOKEN}" }
  events = ["waiting", "finished", "exited"]  # the default: all three

  paddock notify ls          # the webhook and each subscribed browser
  paddock notify test        # a test notification to each, and how each went
  paddock notify rm ID       # forget a browser`,
	}
	cmd.AddCommand(newCmdNotifyLs(f), newCmdNotifyTest(f), newCmdNotifyRm(f))
	return cmd
}

func newCmdNotifyLs(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List where notifications go: the webhook and each subscribed browser",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			st, err := c.NotifyStatus(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f, st.Targets)
			}
			if len(st.Targets) == 0 {
				fmt.Fprintln(f.IO.ErrOut, "no notifications are sent: set webhook in [notify] of the config file, or press \"Notify me\" in the web UI (paddock web)")
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tWHERE\tLABEL\tLAST SENT")
			for _, t := range st.Targets {
				sent := "-"
				if t.Kind == "push" {
					sent = "never"
					if !t.LastSent.IsZero() {
						sent = age(time.Since(t.LastSent)) + " ago"
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Kind, t.Where, t.Label, sent)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newCmdNotifyTest(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "test",
		Short: "Send a test notification to every target and say how each went",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			results, err := c.TestNotify(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f, results)
			}
			if len(results) == 0 {
				return fmt.Errorf("nothing to test: set webhook in [notify] of the config file, or press \"Notify me\" in the web UI (paddock web)")
			}
			failed := 0
			for _, r := range results {
				name := r.Target.Kind + " " + r.Target.Where
				if r.Target.Kind == "push" {
					name = fmt.Sprintf("push %s (%s, %s)", r.Target.ID, r.Target.Where, r.Target.Label)
				}
				if r.Error != "" {
					failed++
					fmt.Fprintf(f.IO.Out, "failed  %s: %s\n", name, r.Error)
					continue
				}
				fmt.Fprintf(f.IO.Out, "sent    %s\n", name)
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d notifications were not delivered", failed, len(results))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newCmdNotifyRm(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID",
		Short: "Forget a subscribed browser (its ID from paddock notify ls)",
		Args:  exactArgs(1, "one target ID from `paddock notify ls`"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			if err := c.RemoveNotifyTarget(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: removed %s; that browser gets no more notifications\n", args[0])
			return nil
		},
	}
}
