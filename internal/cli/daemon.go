package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

func newCmdDaemon(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "daemon", Short: "Control the background daemon"}
	cmd.AddCommand(&cobra.Command{
		Use:   "stop",
		Short: "Stop the daemon; sandboxes keep running",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDaemonStop(cmd.Context(), f)
		},
	}, &cobra.Command{
		Use:   "status",
		Short: "Say whether the daemon runs, and its pid and version",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := f.Paths()
			if err != nil {
				return err
			}
			v, err := apiClient(p).Version(cmd.Context())
			if daemonAbsent(err) {
				fmt.Fprintf(f.IO.Out, "not running (socket %s)\n", p.Socket)
				return &exitError{3}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "running: pid %d, version %s, socket %s\n", v.PID, v.Version, p.Socket)
			return nil
		},
	})
	return cmd
}

func runDaemonStop(ctx context.Context, f *Factory) error {
	p, err := f.Paths()
	if err != nil {
		return err
	}
	c := apiClient(p)
	v, err := c.Version(ctx)
	if daemonAbsent(err) {
		fmt.Fprintln(f.IO.ErrOut, "paddock: the daemon is not running")
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.StopDaemon(ctx); err != nil {
		return err
	}
	// Stopped once its socket is gone and it has let go of its lock: the socket goes
	// first, and a command that started a daemon in between would find the lock held.
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := c.Version(ctx); daemonAbsent(err) && lockFree(filepath.Join(p.State, "daemon.lock")) {
			fmt.Fprintf(f.IO.ErrOut, "paddock: stopped the daemon (pid %d); sandboxes keep running\n", v.PID)
			return nil
		}
	}
	return fmt.Errorf("the daemon (pid %d) did not stop within 15 s", v.PID)
}

// lockFree says whether no daemon holds the lock at path.
func lockFree(path string) bool {
	fh, err := os.Open(path)
	if err != nil {
		return true
	}
	defer fh.Close()
	if syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false
	}
	syscall.Flock(int(fh.Fd()), syscall.LOCK_UN)
	return true
}
