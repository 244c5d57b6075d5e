package guestcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/guest"
)

// newNSInit is `guest ns-init -- ARGV`: process 1 of a sandbox whose pid namespace
// paddock's own process starts (bubblewrap's --as-pid-1).
func newNSInit() command {
	return command{name: "ns-init", usage: "-- ARGV", hidden: true,
		short: "Run a command as pid 1 of the sandbox, reaping orphans (bubblewrap runs it)",
		setup: func(*flag.FlagSet) runFunc {
			return func(_ context.Context, args []string) error {
				if len(args) == 0 {
					return errors.New("ns-init needs the command to run after --")
				}
				return nsInit(args)
			}
		}}
}

// nsInit runs argv as the only child of process 1 of the sandbox's pid namespace, with
// this process's standard streams and every other descriptor it inherited, reaps every
// orphan the namespace's processes leave, and ends when argv does (with an error when
// argv failed). It is not dumpable, so
// no process of the sandbox can trace it (with ptrace it could stop it, and the zombies
// would pile up) nor read its memory; a signal from inside the namespace cannot stop or
// kill it, since the kernel delivers to a namespace's init only the signals it handles.
// Those it handles (SIGTERM, SIGINT, SIGHUP) it passes on to argv.
func nsInit(argv []string) error {
	if os.Getpid() != 1 {
		return errors.New("ns-init runs as pid 1 of a new pid namespace (bubblewrap's --as-pid-1 runs it)")
	}
	if err := guest.Untraceable(); err != nil {
		return err
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = inherited()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	ws, err := reapUntil(cmd.Process.Pid)
	if err != nil {
		return err
	}
	if ws.Signaled() || ws.ExitStatus() != 0 {
		return fmt.Errorf("the guest ended: %v", describeWait(ws))
	}
	return nil
}

// inherited returns the descriptors from 3 up to the first one not open, as
// exec.Cmd.ExtraFiles passes them on: at the same numbers.
func inherited() []*os.File {
	var files []*os.File
	for fd := 3; ; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			return files
		}
		files = append(files, os.NewFile(uintptr(fd), fmt.Sprintf("fd%d", fd)))
	}
}
