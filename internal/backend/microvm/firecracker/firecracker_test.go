package firecracker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/backend/microvm/firecracker"
	"github.com/paddockhq/paddock/internal/backend/microvm/firecracker/fctest"
)

var boot = firecracker.Boot{
	Machine: firecracker.MachineConfig{VCPUCount: 2, MemSizeMiB: 1024},
	Source:  firecracker.BootSource{KernelImagePath: "/k/vmlinux", InitrdPath: "/k/initrd.cpio", BootArgs: "console=ttyS0 -- agent vm-init"},
	Drives: []firecracker.Drive{{DriveID: "root", PathOnHost: "/i/rootfs.ext4", IsRootDevice: false, IsReadOnly: true},
		{DriveID: "data", PathOnHost: "/s/data.ext4", CacheType: "Writeback"}},
	Vsock: firecracker.Vsock{GuestCID: 3, UDSPath: "/s/vsock.sock"},
}

// TestBootSuspendResume: a VM booted, suspended to a snapshot and resumed from it in a
// fresh process, each request as the API states it, in an order it accepts.
func TestBootSuspendResume(t *testing.T) {
	ctx := context.Background()
	fc := fctest.Start(t)
	c := firecracker.New(fc.Socket)
	if err := c.Boot(ctx, boot); err != nil {
		t.Fatal(err)
	}
	if info, err := c.Describe(ctx); err != nil || info.State != "Running" {
		t.Fatalf("after Boot: %+v, %v", info, err)
	}
	var got []string
	for _, call := range fc.Calls() {
		got = append(got, call.Method+" "+call.Path)
	}
	want := "PUT /machine-config,PUT /boot-source,PUT /drives/root,PUT /drives/data,PUT /vsock,PUT /actions,GET /"
	if strings.Join(got, ",") != want {
		t.Fatalf("calls: %s\nwant:  %s", strings.Join(got, ","), want)
	}
	calls := fc.Calls()
	if calls[5].Body["action_type"] != "InstanceStart" || calls[1].Body["initrd_path"] != "/k/initrd.cpio" || calls[3].Body["cache_type"] != "Writeback" {
		t.Fatalf("bodies: %+v", calls)
	}
	if err := c.Suspend(ctx, "/s/vm.state", "/s/vm.mem"); err != nil {
		t.Fatal(err)
	}
	if fc.State() != "Paused" {
		t.Fatalf("after Suspend: %s", fc.State())
	}

	fresh := fctest.Start(t)
	c2 := firecracker.New(fresh.Socket)
	if err := c2.ResumeFrom(ctx, "/s/vm.state", "/s/vm.mem"); err != nil {
		t.Fatal(err)
	}
	load := fresh.Calls()[0]
	if load.Path != "/snapshot/load" || load.Body["resume_vm"] != true || load.Body["mem_backend"].(map[string]any)["backend_type"] != "File" {
		t.Fatalf("load: %+v", load)
	}
	if fresh.State() != "Running" {
		t.Fatalf("after ResumeFrom: %s", fresh.State())
	}
}

// TestRefusals: the fake refuses what Firecracker refuses, and the client reports the
// fault message.
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		do    func(c *firecracker.Client) error
		fault string
	}{
		{"start without a kernel", func(c *firecracker.Client) error { return c.Start(ctx) }, "without kernel configuration"},
		{"pause before start", func(c *firecracker.Client) error { return c.Pause(ctx) }, "before starting"},
		{"snapshot of a running VM", func(c *firecracker.Client) error {
			if err := c.Boot(ctx, boot); err != nil {
				return err
			}
			return c.CreateSnapshot(ctx, firecracker.SnapshotCreate{SnapshotPath: "/s", MemFilePath: "/m"})
		}, "not paused"},
		{"configure after start", func(c *firecracker.Client) error {
			if err := c.Boot(ctx, boot); err != nil {
				return err
			}
			return c.PutMachineConfig(ctx, firecracker.MachineConfig{VCPUCount: 1, MemSizeMiB: 128})
		}, "after starting"},
		{"start twice", func(c *firecracker.Client) error {
			if err := c.Boot(ctx, boot); err != nil {
				return err
			}
			return c.Start(ctx)
		}, "after starting"},
		{"load after configuring", func(c *firecracker.Client) error {
			if err := c.PutMachineConfig(ctx, boot.Machine); err != nil {
				return err
			}
			return c.ResumeFrom(ctx, "/s", "/m")
		}, "after configuring"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := fctest.Start(t)
			err := tc.do(firecracker.New(fc.Socket))
			var ae *firecracker.APIError
			if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Fault, tc.fault) {
				t.Fatalf("got %v, want a 400 whose fault says %q", err, tc.fault)
			}
		})
	}
}

// TestFakeRefusesUnknownFields: a body with a field the API does not define is
// refused, as Firecracker's deserializer does: the fake cannot pass a client that
// misspells one.
func TestFakeRefusesUnknownFields(t *testing.T) {
	fc := fctest.Start(t)
	c := firecracker.New(fc.Socket)
	type misspelt struct {
		VCPUCount  int   `json:"vcpu_count"`
		MemSizeMiB int64 `json:"mem_size_mb"`
	}
	err := firecracker.Do(context.Background(), c, "PUT", "/machine-config", misspelt{1, 128})
	var ae *firecracker.APIError
	if !errors.As(err, &ae) || !strings.Contains(ae.Fault, "unknown field") {
		t.Fatalf("a misspelt field: %v, want refused", err)
	}
}
