// Package fctest is a fake of Firecracker's API on a unix socket, faithful to its API
// specification where the client depends on it: each request's body is decoded with
// unknown fields refused and its required fields checked; configuration is accepted
// only before boot; InstanceStart needs a boot source and starts once; PATCH /vm works
// on a started VM; a snapshot is created from a paused VM only, and loaded only into a
// process that has configured nothing. It records every call for tests to check their
// order and bodies. By itself it runs no VM; Main runs it as the firecracker program,
// its "VM" the guest binary as a host process (see Main).
package fctest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Call is one request the fake received.
type Call struct {
	Method, Path string
	Body         map[string]any
	// Status is what the fake answered.
	Status int
}

// Server is the fake Firecracker API.
type Server struct {
	Socket string

	// CheckFiles makes the configuration's files be opened as Firecracker opens them
	// (the kernel, the initramfs, each drive's file): a path that does not open is
	// refused. Set when the fake runs as the firecracker program.
	CheckFiles bool
	// Machine, when set, is the "VM" that InstanceStart, pause, resume and snapshots act
	// on; without one the fake only keeps the instance's state.
	Machine Machine
	// OnCall, when set, is told of every call once it is answered.
	OnCall func(Call)
	// ID is the instance's id, as GET / reports it.
	ID string
	// Root, when set, is the directory the process's paths are in, as a chroot's:
	// "/vmlinux" is Root/vmlinux, and no path leaves it.
	Root string

	mu         sync.Mutex
	config     Config
	calls      []Call
	state      string // "Not started", "Running", "Paused"
	configured bool
	bootSource bool
	drives     map[string]bool
	rootDrive  string
}

// Start serves the fake on a socket in a test's temporary directory.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s := NewServer(filepath.Join(tb.TempDir(), "firecracker.sock"))
	ln, err := net.Listen("unix", s.Socket)
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: s}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	return s
}

// NewServer is a fake API for the socket path, in the state of a fresh process; the
// caller serves it.
func NewServer(socket string) *Server {
	return &Server{Socket: socket, state: "Not started", drives: map[string]bool{}, ID: "anonymous-instance",
		config: Config{Drives: map[string]string{}}}
}

// ServeHTTP answers one API request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.serve(w, r) }

var _ http.Handler = (*Server)(nil)

// Resolve is the host's path of a path of the process: under Root when set.
func (s *Server) Resolve(p string) string {
	if s.Root == "" || p == "" {
		return p
	}
	return filepath.Join(s.Root, filepath.Clean("/"+p))
}

// openable refuses a path Firecracker could not open, when the fake checks files.
func (s *Server) openable(what, path string) *fault {
	if !s.CheckFiles || path == "" {
		return nil
	}
	f, err := os.Open(s.Resolve(path))
	if err != nil {
		return &fault{http.StatusBadRequest, "Cannot open the " + what + ": " + err.Error()}
	}
	f.Close()
	return nil
}

// Config is what the VM was configured with, as a Machine needs it.
type Config struct {
	KernelImagePath string `json:"kernel_image_path"`
	InitrdPath      string `json:"initrd_path"`
	BootArgs        string `json:"boot_args"`
	// Drives are the drives' host paths by id.
	Drives   map[string]string `json:"drives"`
	GuestCID int               `json:"guest_cid"`
	UDSPath  string            `json:"uds_path"`
}

// Machine is what runs behind the fake API; its errors are the API's faults.
type Machine interface {
	// Start starts the configured VM (InstanceStart).
	Start(cfg Config) error
	// Pause and Resume stop and continue the VM (PATCH /vm).
	Pause() error
	Resume() error
	// Snapshot writes the paused VM's state and memory (PUT /snapshot/create).
	Snapshot(cfg Config, statePath, memPath string) error
	// Load restores a VM from a snapshot into this process, paused or running, and
	// returns its configuration (PUT /snapshot/load).
	Load(statePath, memPath string, resume bool) (Config, error)
}

// Calls are the requests received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// State is the instance's state as GET / reports it.
func (s *Server) State() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// The request bodies, as the specification defines them (the fields the fake knows).
type (
	bootSource struct {
		KernelImagePath *string `json:"kernel_image_path"`
		BootArgs        string  `json:"boot_args"`
		InitrdPath      string  `json:"initrd_path"`
	}
	drive struct {
		DriveID      *string         `json:"drive_id"`
		PathOnHost   *string         `json:"path_on_host"`
		IsRootDevice *bool           `json:"is_root_device"`
		IsReadOnly   *bool           `json:"is_read_only"`
		PartUUID     string          `json:"partuuid"`
		CacheType    string          `json:"cache_type"`
		RateLimiter  json.RawMessage `json:"rate_limiter"`
		IOEngine     string          `json:"io_engine"`
	}
	machineConfig struct {
		VCPUCount       *int   `json:"vcpu_count"`
		MemSizeMiB      *int64 `json:"mem_size_mib"`
		SMT             bool   `json:"smt"`
		TrackDirtyPages bool   `json:"track_dirty_pages"`
		CPUTemplate     string `json:"cpu_template"`
		HugePages       string `json:"huge_pages"`
	}
	vsock struct {
		GuestCID *int    `json:"guest_cid"`
		UDSPath  *string `json:"uds_path"`
		VsockID  string  `json:"vsock_id"`
	}
	action struct {
		ActionType *string `json:"action_type"`
	}
	vmState struct {
		State *string `json:"state"`
	}
	snapshotCreate struct {
		SnapshotType string  `json:"snapshot_type"`
		SnapshotPath *string `json:"snapshot_path"`
		MemFilePath  *string `json:"mem_file_path"`
		Version      string  `json:"version"`
	}
	memBackend struct {
		BackendType *string `json:"backend_type"`
		BackendPath *string `json:"backend_path"`
	}
	snapshotLoad struct {
		SnapshotPath        *string     `json:"snapshot_path"`
		MemFilePath         *string     `json:"mem_file_path"`
		MemBackend          *memBackend `json:"mem_backend"`
		EnableDiffSnapshots bool        `json:"enable_diff_snapshots"`
		ResumeVM            bool        `json:"resume_vm"`
	}
)

// fault is an error answer.
type fault struct {
	status int
	msg    string
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var raw bytes.Buffer
	raw.ReadFrom(r.Body)
	var body map[string]any
	json.Unmarshal(raw.Bytes(), &body)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out any
	f := s.handle(r.Method, r.URL.Path, raw.Bytes(), &out)
	status := http.StatusNoContent
	if f != nil {
		status = f.status
	} else if out != nil {
		status = http.StatusOK
	}
	call := Call{Method: r.Method, Path: r.URL.Path, Body: body, Status: status}
	s.calls = append(s.calls, call)
	if s.OnCall != nil {
		s.OnCall(call)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if f != nil {
		json.NewEncoder(w).Encode(map[string]string{"fault_message": f.msg})
	} else if out != nil {
		json.NewEncoder(w).Encode(out)
	}
}

func decode(data []byte, into any) *fault {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		return &fault{http.StatusBadRequest, "An error occurred when deserializing the json body of a request: " + err.Error()}
	}
	return nil
}

func missing(field string) *fault {
	return &fault{http.StatusBadRequest, "missing field `" + field + "`"}
}

// preBoot refuses configuration of a started (or snapshot-loaded) VM.
func (s *Server) preBoot(what string) *fault {
	if s.state != "Not started" {
		return &fault{http.StatusBadRequest, "The requested operation is not supported after starting the microVM: " + what}
	}
	return nil
}

func (s *Server) handle(method, path string, data []byte, out *any) *fault {
	switch {
	case method == http.MethodGet && path == "/":
		*out = map[string]string{"id": s.ID, "state": s.state, "vmm_version": "fake", "app_name": "Firecracker"}
		return nil
	case method == http.MethodPut && path == "/boot-source":
		var b bootSource
		if f := decode(data, &b); f != nil {
			return f
		}
		if b.KernelImagePath == nil {
			return missing("kernel_image_path")
		}
		if f := s.preBoot("boot source"); f != nil {
			return f
		}
		if f := s.openable("kernel image", *b.KernelImagePath); f != nil {
			return f
		}
		if f := s.openable("initrd", b.InitrdPath); f != nil {
			return f
		}
		s.config.KernelImagePath, s.config.InitrdPath, s.config.BootArgs = *b.KernelImagePath, b.InitrdPath, b.BootArgs
		s.bootSource, s.configured = true, true
		return nil
	case method == http.MethodPut && strings.HasPrefix(path, "/drives/"):
		var d drive
		if f := decode(data, &d); f != nil {
			return f
		}
		switch {
		case d.DriveID == nil:
			return missing("drive_id")
		case d.PathOnHost == nil:
			return missing("path_on_host")
		case d.IsRootDevice == nil:
			return missing("is_root_device")
		case *d.DriveID != strings.TrimPrefix(path, "/drives/"):
			return &fault{http.StatusBadRequest, "The id from the path does not match the id from the body!"}
		case d.CacheType != "" && d.CacheType != "Unsafe" && d.CacheType != "Writeback":
			return &fault{http.StatusBadRequest, "unknown variant `" + d.CacheType + "`, expected `Unsafe` or `Writeback`"}
		}
		if f := s.preBoot("drive"); f != nil {
			return f
		}
		if f := s.openable("block device", *d.PathOnHost); f != nil {
			return f
		}
		s.config.Drives[*d.DriveID] = *d.PathOnHost
		if *d.IsRootDevice {
			if s.rootDrive != "" && s.rootDrive != *d.DriveID {
				return &fault{http.StatusBadRequest, "A root block device already exists!"}
			}
			s.rootDrive = *d.DriveID
		}
		s.drives[*d.DriveID], s.configured = true, true
		return nil
	case method == http.MethodPut && path == "/machine-config":
		var m machineConfig
		if f := decode(data, &m); f != nil {
			return f
		}
		switch {
		case m.VCPUCount == nil:
			return missing("vcpu_count")
		case m.MemSizeMiB == nil:
			return missing("mem_size_mib")
		case *m.VCPUCount < 1 || *m.VCPUCount > 32:
			return &fault{http.StatusBadRequest, "The vCPU number is invalid! The vCPU number can only be 1 or an even number when SMT is enabled."}
		case *m.MemSizeMiB < 1:
			return &fault{http.StatusBadRequest, "The memory size (MiB) is invalid."}
		}
		if f := s.preBoot("machine configuration"); f != nil {
			return f
		}
		s.configured = true
		return nil
	case method == http.MethodPut && path == "/vsock":
		var v vsock
		if f := decode(data, &v); f != nil {
			return f
		}
		switch {
		case v.GuestCID == nil:
			return missing("guest_cid")
		case v.UDSPath == nil:
			return missing("uds_path")
		case *v.GuestCID < 3:
			return &fault{http.StatusBadRequest, "guest_cid must be at least 3"}
		}
		if f := s.preBoot("vsock"); f != nil {
			return f
		}
		s.config.GuestCID, s.config.UDSPath = *v.GuestCID, *v.UDSPath
		s.configured = true
		return nil
	case method == http.MethodPut && path == "/actions":
		var a action
		if f := decode(data, &a); f != nil {
			return f
		}
		if a.ActionType == nil {
			return missing("action_type")
		}
		switch *a.ActionType {
		case "InstanceStart":
			if s.state != "Not started" {
				return &fault{http.StatusBadRequest, "The requested operation is not supported after starting the microVM."}
			}
			if !s.bootSource {
				return &fault{http.StatusBadRequest, "Cannot start microvm without kernel configuration."}
			}
			if s.Machine != nil {
				if err := s.Machine.Start(s.config); err != nil {
					return &fault{http.StatusBadRequest, "Failed to start microVM: " + err.Error()}
				}
			}
			s.state = "Running"
			return nil
		case "SendCtrlAltDel", "FlushMetrics":
			if s.state == "Not started" {
				return &fault{http.StatusBadRequest, "The requested operation is not supported before starting the microVM."}
			}
			return nil
		}
		return &fault{http.StatusBadRequest, fmt.Sprintf("unknown variant `%s`, expected one of `FlushMetrics`, `InstanceStart`, `SendCtrlAltDel`", *a.ActionType)}
	case method == http.MethodPatch && path == "/vm":
		var v vmState
		if f := decode(data, &v); f != nil {
			return f
		}
		if v.State == nil {
			return missing("state")
		}
		if s.state == "Not started" {
			return &fault{http.StatusBadRequest, "The requested operation is not supported before starting the microVM."}
		}
		switch *v.State {
		case "Paused":
			if s.Machine != nil {
				if err := s.Machine.Pause(); err != nil {
					return &fault{http.StatusBadRequest, "Failed to pause the microVM: " + err.Error()}
				}
			}
			s.state = "Paused"
		case "Resumed":
			if s.Machine != nil {
				if err := s.Machine.Resume(); err != nil {
					return &fault{http.StatusBadRequest, "Failed to resume the microVM: " + err.Error()}
				}
			}
			s.state = "Running"
		default:
			return &fault{http.StatusBadRequest, "unknown variant `" + *v.State + "`, expected `Paused` or `Resumed`"}
		}
		return nil
	case method == http.MethodPut && path == "/snapshot/create":
		var c snapshotCreate
		if f := decode(data, &c); f != nil {
			return f
		}
		switch {
		case c.SnapshotPath == nil:
			return missing("snapshot_path")
		case c.MemFilePath == nil:
			return missing("mem_file_path")
		case c.SnapshotType != "" && c.SnapshotType != "Full" && c.SnapshotType != "Diff":
			return &fault{http.StatusBadRequest, "unknown variant `" + c.SnapshotType + "`, expected `Full` or `Diff`"}
		case s.state != "Paused":
			return &fault{http.StatusBadRequest, "Cannot create a snapshot of a microVM that is not paused."}
		}
		if s.Machine != nil {
			if err := s.Machine.Snapshot(s.config, s.Resolve(*c.SnapshotPath), s.Resolve(*c.MemFilePath)); err != nil {
				return &fault{http.StatusBadRequest, "Failed to create the snapshot: " + err.Error()}
			}
		}
		return nil
	case method == http.MethodPut && path == "/snapshot/load":
		var l snapshotLoad
		if f := decode(data, &l); f != nil {
			return f
		}
		switch {
		case l.SnapshotPath == nil:
			return missing("snapshot_path")
		case (l.MemBackend == nil) == (l.MemFilePath == nil):
			return &fault{http.StatusBadRequest, "either `mem_backend` or `mem_file_path` is required, not both"}
		case l.MemBackend != nil && (l.MemBackend.BackendType == nil || l.MemBackend.BackendPath == nil):
			return missing("mem_backend.backend_type or backend_path")
		case l.MemBackend != nil && *l.MemBackend.BackendType != "File" && *l.MemBackend.BackendType != "Uffd":
			return &fault{http.StatusBadRequest, "unknown variant `" + *l.MemBackend.BackendType + "`, expected `File` or `Uffd`"}
		case s.configured || s.state != "Not started":
			return &fault{http.StatusBadRequest, "Loading a microVM snapshot not allowed after configuring boot-specific resources."}
		}
		if s.Machine != nil {
			mem := ""
			if l.MemBackend != nil {
				mem = *l.MemBackend.BackendPath
			} else {
				mem = *l.MemFilePath
			}
			cfg, err := s.Machine.Load(s.Resolve(*l.SnapshotPath), s.Resolve(mem), l.ResumeVM)
			if err != nil {
				return &fault{http.StatusBadRequest, "Load snapshot error: " + err.Error()}
			}
			s.config = cfg
		}
		s.state = "Paused"
		if l.ResumeVM {
			s.state = "Running"
		}
		s.configured = true
		return nil
	}
	return &fault{http.StatusBadRequest, "Invalid request method and/or path: " + method + " " + path}
}
