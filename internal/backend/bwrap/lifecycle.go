package bwrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/diskimage"
	"github.com/paddockhq/paddock/internal/inside"
)

// guestPath is where the guest appears inside every sandbox.
const guestPath = inside.GuestBinary

// Start implements backend.Backend.
func (b *Bwrap) Start(ctx context.Context, id backend.ID) error {
	spec, err := b.readSpec(id)
	if err != nil {
		return err
	}
	if b.bwrap == "" {
		return b.Available(ctx)
	}
	if ri, ok := b.readRun(id); ok && ri.alive() {
		return nil
	}
	if err := b.mountDisk(ctx, id); err != nil {
		return err
	}
	p := b.paths(id)
	if _, err := os.Stat(spec.GuestBinary); err != nil {
		return fmt.Errorf("start sandbox %s: guest binary: %w", id, err)
	}

	ln, lnFile, err := listen(p.socket())
	if err != nil {
		return fmt.Errorf("start sandbox %s: %w", id, err)
	}
	defer ln.Close() // the agent holds its own copy of the listening socket
	defer lnFile.Close()

	infoR, infoW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer infoR.Close()
	logf, err := os.OpenFile(p.log(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()

	files, err := b.launchFiles(spec, p)
	if err != nil {
		infoW.Close()
		return fmt.Errorf("start sandbox %s: %w", id, err)
	}
	for _, f := range files {
		defer f.Close()
	}
	cg, err := b.newCgroup(ctx, spec)
	if err != nil {
		infoW.Close()
		return fmt.Errorf("start sandbox %s: %w", id, err)
	}
	// Not CommandContext: the sandbox must outlive this call and the daemon. Its options,
	// which carry the sandbox's environment and so its placeholder key, come through a
	// descriptor: a command line is readable by every user of the host.
	cmd := b.command(context.Background(), append([]string{"--args", strconv.Itoa(fdArgs), "--"}, agentCommand(spec)...))
	// bwrap clears it for the sandbox (--clearenv); it names the sandbox's bwrap to Leftovers.
	cmd.Env = []string{"PADDOCK_SANDBOX_ID=" + string(id)}
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = append([]*os.File{lnFile, infoW}, files...)
	cmd.SysProcAttr.Setsid = true
	err = cg.start(cmd) // born in its cgroup, with every process it will have
	infoW.Close()
	if err != nil {
		return fmt.Errorf("start sandbox %s: run bwrap: %w", id, err)
	}
	exited := b.reap(id, cmd)

	var info struct {
		ChildPID int `json:"child-pid"`
	}
	infoCh := make(chan error, 1)
	go func() { infoCh <- json.NewDecoder(infoR).Decode(&info) }()
	select {
	case err = <-infoCh:
	case <-time.After(15 * time.Second):
		err = errors.New("timed out waiting for bwrap to set up the sandbox")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil || info.ChildPID <= 0 {
		cmd.Process.Kill()
		return fmt.Errorf("start sandbox %s: bwrap failed: %v: %s", id, err, tail(p.log()))
	}
	start, err := backend.ProcStartTime(info.ChildPID)
	if err != nil {
		return fmt.Errorf("start sandbox %s: the sandbox exited at once: %s", id, tail(p.log()))
	}
	bstart, _ := backend.ProcStartTime(cmd.Process.Pid)
	ri := runInfo{BwrapPID: cmd.Process.Pid, BwrapStart: bstart, ChildPID: info.ChildPID, StartTime: start}
	data, _ := json.Marshal(ri)
	if err := writeFileAtomic(p.run(), data, 0o600); err != nil {
		syscall.Kill(ri.ChildPID, syscall.SIGKILL)
		return err
	}

	// Wait for the guest's answer, or for bwrap to give up (a mount it could not make).
	hctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-hctx.Done():
		}
	}()
	if err := b.handshake(hctx, id); err != nil {
		b.Stop(context.Background(), id)
		return fmt.Errorf("start sandbox %s: the guest did not answer: %v: %s", id, err, tail(p.log()))
	}
	return nil
}

// listen creates the guest's unix listener on the host and returns it with a dup of its
// descriptor to hand to the sandbox.
func listen(path string) (*net.UnixListener, *os.File, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("remove stale agent socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, nil, fmt.Errorf("listen for the agent: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, nil, err
	}
	f, err := ln.File()
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	return ln, f, nil
}

// reap waits for a bwrap process this daemon started, so it leaves no zombie. The
// returned channel closes when it exits.
func (b *Bwrap) reap(id backend.ID, cmd *exec.Cmd) <-chan struct{} {
	b.mu.Lock()
	b.procs[id] = cmd
	b.mu.Unlock()
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		cmd.Wait()
		b.mu.Lock()
		if b.procs[id] == cmd {
			delete(b.procs, id)
		}
		b.mu.Unlock()
	}()
	return exited
}

// command builds a bwrap invocation. As root, bwrap runs inside a user namespace that
// maps its root to an unprivileged host uid (see rootHostID).
func (b *Bwrap) command(ctx context.Context, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, b.bwrap, args...)
	cmd.Env = []string{} // nothing from the daemon's environment
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if b.hostID != 0 {
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: b.hostID, Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: b.hostID, Size: 1}}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 0, Gid: 0}
	}
	return cmd
}

// Stop implements backend.Backend: it kills the sandbox's init process, which makes the
// kernel end every process in the sandbox's pid namespace.
func (b *Bwrap) Stop(ctx context.Context, id backend.ID) error {
	if _, err := b.readSpec(id); err != nil {
		return err
	}
	p := b.paths(id)
	ri, ok := b.readRun(id)
	if ok {
		if ri.alive() {
			if err := syscall.Kill(ri.ChildPID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("stop sandbox %s: %w", id, err)
			}
		}
		if err := waitGone(ctx, ri.ChildPID, ri.StartTime); err != nil {
			return fmt.Errorf("stop sandbox %s: %w", id, err)
		}
		if err := waitGone(ctx, ri.BwrapPID, ri.BwrapStart); err != nil {
			return fmt.Errorf("stop sandbox %s: bwrap: %w", id, err)
		}
	}
	for _, f := range []string{p.run(), p.socket()} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := b.cg.sandbox(id).remove(ctx); err != nil {
		return fmt.Errorf("stop sandbox %s: %w", id, err)
	}
	return nil
}

// waitGone waits for a process to end (or become a zombie awaiting its parent).
func waitGone(ctx context.Context, pid int, start uint64) error {
	deadline := time.Now().Add(10 * time.Second)
	for delay := time.Millisecond; ; delay = min(delay*2, 50*time.Millisecond) {
		st, err := backend.ProcStartTime(pid)
		if err != nil || st != start {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d did not end", pid)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
}

// Destroy implements backend.Backend.
func (b *Bwrap) Destroy(ctx context.Context, id backend.ID) error {
	if err := validID(id); err != nil {
		return err
	}
	err := b.Stop(ctx, id)
	if err != nil && !errors.Is(err, backend.ErrNotFound) {
		return err
	}
	b.mu.Lock()
	delete(b.limits, id)
	b.mu.Unlock()
	if err := b.removeDisk(id); err != nil {
		return err
	}
	return removeAll(b.paths(id).root)
}

// removeAll removes a tree even where the sandbox took away the write or search bits
// of its own directories.
func removeAll(root string) error {
	if err := os.RemoveAll(root); err == nil {
		return nil
	}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(path, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("remove sandbox files: %w", err)
	}
	return nil
}

// tail returns the end of the guest log, for error messages.
func tail(path string) string {
	b, _ := backend.ReadEnd(path, 600)
	return strings.TrimSpace(string(b))
}

// Leftovers lists what remains of a sandbox on the host: its directory, mounts naming
// it, and any process whose command line names it or whose environment carries its ID.
// The conformance suite checks it is empty after Destroy.
func (b *Bwrap) Leftovers(id backend.ID) []string {
	var out []string
	root := b.paths(id).root
	if _, err := os.Lstat(root); err == nil {
		out = append(out, "directory "+root)
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(mounts), root) {
		out = append(out, "a mount under "+root)
	}
	marker := "PADDOCK_SANDBOX_ID=" + string(id) + "\x00"
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		environ, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if strings.Contains(string(cmdline), root) || strings.Contains(string(environ), marker) {
			out = append(out, "process "+e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	for _, d := range b.cg.sandbox(id).exists() {
		out = append(out, "cgroup "+d)
	}
	return append(out, diskimage.Leftovers(root)...)
}
