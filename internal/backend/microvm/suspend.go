package microvm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/vmspec"
)

// Files of a sandbox's directory, for suspend and resume.
const (
	// savedState is the VM's memory and devices, saved by Suspend for Start to resume.
	savedState = "vmstate"
	// resumeNote says why the last Start booted the VM afresh rather than resuming it.
	resumeNote = "resume-note"
)

var _ backend.Suspender = (*MicroVM)(nil)

// Suspend implements backend.Suspender: the VM is paused, its memory and devices are
// saved to a file in the sandbox's directory, and its monitor ends; the data disk is as
// the paused VM left it. Start loads the file and the VM carries on where it was.
func (m *MicroVM) Suspend(ctx context.Context, id backend.ID) error {
	md, err := m.readMeta(id)
	if err != nil {
		return backend.ErrNotFound
	}
	d := m.vmm(md.VMM)
	if err := d.suspendable(); err != nil {
		return err
	}
	alive, detail, err := d.status(ctx, id)
	if err != nil {
		return err
	}
	if !alive || detail != "" {
		return fmt.Errorf("microvm: suspend %s: %w", md.Name, backend.ErrNotRunning)
	}
	dir := m.sandboxDir(id)
	m.forget(id)
	began := time.Now()
	// The files written so far reach the disk, which a cold boot would find should the
	// saved state not load.
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = d.control(sctx, id, vmspec.Sync)
	cancel()
	if err != nil {
		m.log.Warn("the VM's init did not sync its disks before the suspend", "sandbox", md.Name, "err", err)
	}
	if err := d.save(ctx, id, filepath.Join(dir, savedState)); err != nil {
		return fmt.Errorf("microvm: suspend %s (the VM runs on): %w", md.Name, err)
	}
	// From here the VM is its saved state: its monitor ending is no failure.
	os.Remove(filepath.Join(dir, runningFile))
	os.Remove(filepath.Join(dir, resumeNote))
	if err := d.halt(ctx, id); err != nil {
		return err
	}
	m.log.Info("suspended", "sandbox", md.Name, "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// resumeOrBoot starts the sandbox's VM: from its saved state when it has one, else (or
// when that does not load) from its disks, noting why.
func (m *MicroVM) resumeOrBoot(ctx context.Context, id backend.ID, md meta, d vmmDriver) error {
	dir := m.sandboxDir(id)
	saved := filepath.Join(dir, savedState)
	note := filepath.Join(dir, resumeNote)
	os.Remove(note)
	if !exists(saved) {
		return d.boot(ctx, id, md)
	}
	err := d.resume(ctx, id, md, saved)
	if err == nil {
		os.Remove(saved)
		os.Remove(memFile(saved))
		return nil
	}
	if ctx.Err() != nil {
		d.halt(context.Background(), id)
		return err
	}
	m.log.Warn("the VM's saved state did not load; booting it from its disk", "sandbox", md.Name, "err", err)
	if err := d.halt(ctx, id); err != nil {
		return err
	}
	os.Remove(saved)
	os.Remove(memFile(saved))
	why := "started afresh from its disk: the memory `paddock stop --suspend` saved did not load (" + err.Error() +
		"), so what ran in it is gone; /workspace and the home are kept"
	os.WriteFile(note, []byte(why), 0o600)
	return d.boot(ctx, id, md)
}

// suspendable says whether the QEMU driver can suspend VMs: it can.
func (q *qemuVMM) suspendable() error { return nil }

// save pauses the VM and writes its state (memory and devices) to path through QEMU's
// migration to a command; on failure the VM runs on. QEMU 7.2 (Debian 12's) has no
// file: migration, so the stream goes to cat; the file appears whole, renamed when cat
// has written it all.
func (q *qemuVMM) save(ctx context.Context, id backend.ID, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	c, err := dialQMP(ctx, filepath.Join(q.m.sandboxDir(id), qmpSocket))
	if err != nil {
		return err
	}
	defer c.Close()
	part := path + ".part"
	os.Remove(part)
	os.Remove(path)
	if err := c.execute("stop", nil, nil); err != nil {
		return err
	}
	fail := func(err error) error {
		c.execute("migrate_cancel", nil, nil)
		c.execute("cont", nil, nil)
		os.Remove(part)
		os.Remove(path)
		return err
	}
	// A local file: no reason to hold the stream to the network's default rate.
	if err := c.execute("migrate-set-parameters", map[string]any{"max-bandwidth": int64(1) << 40}, nil); err != nil {
		return fail(err)
	}
	uri := "exec:cat > " + shellQuote(part) + " && mv " + shellQuote(part) + " " + shellQuote(path)
	if err := c.execute("migrate", map[string]any{"uri": uri}, nil); err != nil {
		return fail(err)
	}
	for {
		var mi struct {
			Status    string `json:"status"`
			ErrorDesc string `json:"error-desc"`
		}
		if err := c.execute("query-migrate", nil, &mi); err != nil {
			return fail(err)
		}
		switch mi.Status {
		case "completed":
			// QEMU has written it all; cat may still be writing, then mv renames it.
			for !exists(path) {
				if ctx.Err() != nil {
					return fail(fmt.Errorf("the VM's saved state did not appear at %s", path))
				}
				time.Sleep(20 * time.Millisecond)
			}
			return nil
		case "failed", "cancelled":
			return fail(fmt.Errorf("QEMU could not save the VM: %s %s", mi.Status, mi.ErrorDesc))
		}
		if ctx.Err() != nil {
			return fail(fmt.Errorf("saving the VM: %w", ctx.Err()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// resume starts QEMU with the same devices, loading the VM's state from saved, and
// lets the VM go on once it has loaded. QEMU ends when the state does not fit the
// devices (or is not a state at all); its log says why.
func (q *qemuVMM) resume(ctx context.Context, id backend.ID, md meta, saved string) error {
	if err := q.launch(ctx, id, md, saved); err != nil {
		return err
	}
	dir := q.m.sandboxDir(id)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(q.m.settings.StartTimeout)*time.Second)
	defer cancel()
	ended := func() error {
		why := lastConsoleLines(filepath.Join(dir, qemuLog), 3)
		return fmt.Errorf("QEMU ended loading it: %s", strings.ReplaceAll(why, "\n", "; "))
	}
	c, err := dialQMP(ctx, filepath.Join(dir, qmpSocket))
	if err != nil {
		if q.pid(id) == 0 {
			return ended()
		}
		return err
	}
	defer c.Close()
	for {
		var st qmpStatus
		if err := c.execute("query-status", nil, &st); err != nil {
			if waitGone(ctx, q.pid, id, time.Second) {
				return ended()
			}
			return err
		}
		switch st.Status {
		case "inmigrate":
			if ctx.Err() != nil {
				return fmt.Errorf("loading the VM's saved state: %w", ctx.Err())
			}
			time.Sleep(20 * time.Millisecond)
			continue
		case "paused", "prelaunch":
			return c.execute("cont", nil, nil)
		case "running":
			return nil
		}
		return fmt.Errorf("the VM is %s after loading its saved state", st.Status)
	}
}

// shellQuote quotes s as one word of a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
