// Package firecracker is a small client of Firecracker's REST API on its unix socket,
// as its API specification (src/firecracker/swagger/firecracker.yaml) states it: the
// pre-boot configuration (boot source, drives, machine configuration, vsock), the
// InstanceStart action, pause and resume (PATCH /vm), and snapshots (create, load).
// Calls answer 204 No Content, or an error with a fault_message.
//
// Tested only against fctest, a fake of that API (also run as the firecracker program,
// its "VM" the guest binary as a host process): no Firecracker binary was run.
package firecracker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Client talks to one Firecracker process's API socket.
type Client struct {
	hc *http.Client
}

// New is a client of the API socket at path.
func New(socket string) *Client {
	return NewDialer(func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	})
}

// NewDialer is a client of the API socket dial connects to (a socket whose path is
// longer than a socket address holds, say).
func NewDialer(dial func(ctx context.Context) (net.Conn, error)) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) }}
	return &Client{hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// BootSource is PUT /boot-source's body.
type BootSource struct {
	KernelImagePath string `json:"kernel_image_path"`
	BootArgs        string `json:"boot_args,omitempty"`
	InitrdPath      string `json:"initrd_path,omitempty"`
}

// Drive is PUT /drives/{drive_id}'s body.
type Drive struct {
	DriveID      string `json:"drive_id"`
	PathOnHost   string `json:"path_on_host"`
	IsRootDevice bool   `json:"is_root_device"`
	IsReadOnly   bool   `json:"is_read_only"`
	// CacheType is "Unsafe" (the default) or "Writeback".
	CacheType string `json:"cache_type,omitempty"`
}

// MachineConfig is PUT /machine-config's body.
type MachineConfig struct {
	VCPUCount  int   `json:"vcpu_count"`
	MemSizeMiB int64 `json:"mem_size_mib"`
	// TrackDirtyPages enables diff snapshots.
	TrackDirtyPages bool `json:"track_dirty_pages,omitempty"`
}

// Vsock is PUT /vsock's body: the guest's CID and the host socket Firecracker muxes
// connections on ("CONNECT PORT\n" from the host).
type Vsock struct {
	GuestCID int    `json:"guest_cid"`
	UDSPath  string `json:"uds_path"`
}

// SnapshotCreate is PUT /snapshot/create's body.
type SnapshotCreate struct {
	// SnapshotType is "Full" or "Diff".
	SnapshotType string `json:"snapshot_type,omitempty"`
	SnapshotPath string `json:"snapshot_path"`
	MemFilePath  string `json:"mem_file_path"`
}

// MemoryBackend is where a loaded snapshot's memory comes from.
type MemoryBackend struct {
	// BackendType is "File" or "Uffd".
	BackendType string `json:"backend_type"`
	BackendPath string `json:"backend_path"`
}

// SnapshotLoad is PUT /snapshot/load's body.
type SnapshotLoad struct {
	SnapshotPath        string         `json:"snapshot_path"`
	MemBackend          *MemoryBackend `json:"mem_backend,omitempty"`
	EnableDiffSnapshots bool           `json:"enable_diff_snapshots,omitempty"`
	ResumeVM            bool           `json:"resume_vm,omitempty"`
}

// InstanceInfo is GET /'s answer.
type InstanceInfo struct {
	ID      string `json:"id"`
	AppName string `json:"app_name"`
	// State is "Not started", "Running" or "Paused".
	State      string `json:"state"`
	VMMVersion string `json:"vmm_version"`
}

// APIError is an answer other than 2xx: its status and Firecracker's fault_message.
type APIError struct {
	Method, Path string
	Status       int
	Fault        string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("firecracker: %s %s: %d: %s", e.Method, e.Path, e.Status, e.Fault)
}

// PutBootSource sets the kernel, its command line and initramfs (before boot).
func (c *Client) PutBootSource(ctx context.Context, b BootSource) error {
	return c.call(ctx, http.MethodPut, "/boot-source", b, nil)
}

// PutDrive adds or replaces a block device (before boot).
func (c *Client) PutDrive(ctx context.Context, d Drive) error {
	return c.call(ctx, http.MethodPut, "/drives/"+d.DriveID, d, nil)
}

// PutMachineConfig sizes the VM (before boot).
func (c *Client) PutMachineConfig(ctx context.Context, m MachineConfig) error {
	return c.call(ctx, http.MethodPut, "/machine-config", m, nil)
}

// PutVsock adds the vsock device (before boot).
func (c *Client) PutVsock(ctx context.Context, v Vsock) error {
	return c.call(ctx, http.MethodPut, "/vsock", v, nil)
}

// Start boots the configured VM (the InstanceStart action).
func (c *Client) Start(ctx context.Context) error {
	return c.call(ctx, http.MethodPut, "/actions", map[string]string{"action_type": "InstanceStart"}, nil)
}

// Pause pauses a running VM's vCPUs.
func (c *Client) Pause(ctx context.Context) error {
	return c.call(ctx, http.MethodPatch, "/vm", map[string]string{"state": "Paused"}, nil)
}

// Resume resumes a paused VM.
func (c *Client) Resume(ctx context.Context) error {
	return c.call(ctx, http.MethodPatch, "/vm", map[string]string{"state": "Resumed"}, nil)
}

// CreateSnapshot writes a paused VM's state and memory.
func (c *Client) CreateSnapshot(ctx context.Context, s SnapshotCreate) error {
	return c.call(ctx, http.MethodPut, "/snapshot/create", s, nil)
}

// LoadSnapshot restores a VM into a Firecracker process that has configured nothing.
func (c *Client) LoadSnapshot(ctx context.Context, s SnapshotLoad) error {
	return c.call(ctx, http.MethodPut, "/snapshot/load", s, nil)
}

// Describe is the instance's state.
func (c *Client) Describe(ctx context.Context) (InstanceInfo, error) {
	var info InstanceInfo
	err := c.call(ctx, http.MethodGet, "/", nil, &info)
	return info, err
}

func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://localhost"+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("firecracker: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		var fault struct {
			FaultMessage string `json:"fault_message"`
		}
		json.Unmarshal(data, &fault)
		return &APIError{Method: method, Path: path, Status: resp.StatusCode, Fault: fault.FaultMessage}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// Boot is the boot of a VM as the microvm backend makes it: the machine, the kernel
// and its initramfs, the disks, the vsock device, then InstanceStart.
type Boot struct {
	Machine MachineConfig
	Source  BootSource
	Drives  []Drive
	Vsock   Vsock
}

// Boot configures and starts the VM, in the order Firecracker's guide does.
func (c *Client) Boot(ctx context.Context, b Boot) error {
	if err := c.PutMachineConfig(ctx, b.Machine); err != nil {
		return err
	}
	if err := c.PutBootSource(ctx, b.Source); err != nil {
		return err
	}
	for _, d := range b.Drives {
		if err := c.PutDrive(ctx, d); err != nil {
			return err
		}
	}
	if err := c.PutVsock(ctx, b.Vsock); err != nil {
		return err
	}
	return c.Start(ctx)
}

// Suspend pauses the VM and writes its snapshot (state and memory); the Firecracker
// process may then end. Resume (in a new process) loads it.
func (c *Client) Suspend(ctx context.Context, statePath, memPath string) error {
	if err := c.Pause(ctx); err != nil {
		return err
	}
	return c.CreateSnapshot(ctx, SnapshotCreate{SnapshotType: "Full", SnapshotPath: statePath, MemFilePath: memPath})
}

// ResumeFrom loads a snapshot into a fresh Firecracker process and resumes the VM.
func (c *Client) ResumeFrom(ctx context.Context, statePath, memPath string) error {
	return c.LoadSnapshot(ctx, SnapshotLoad{SnapshotPath: statePath,
		MemBackend: &MemoryBackend{BackendType: "File", BackendPath: memPath}, ResumeVM: true})
}
