// Package sshhost runs sandboxes on other Linux machines reached over SSH
// (golang.org/x/crypto/ssh): the hosts of `paddock host add`, each with its host key
// pinned. The daemon keeps one SSH connection per host, copies paddock there when it is
// missing or another build, and runs `paddock backend serve` on it, which makes the
// sandboxes with the host's best backend (bwrap where it works, else docker). Every
// lifecycle call and every stream to a guest is a yamux stream over that one
// connection's session. The laptop's ssh-agent signs the login and is never forwarded.
package sshhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/backend"
)

// Name is the registry name.
const Name = "ssh"

// PlaceHost is the placement key naming the host (`up --host`).
const PlaceHost = wire.PlaceHost

// description is what the backend is: a host the user names, unranked, so never chosen
// for the user; `up --host NAME` places a sandbox.
var description = backend.Description{Limits: true, Placement: []string{PlaceHost}}

func init() {
	backend.Register(Name, description, func(env backend.Env) (backend.Backend, error) { return New(env) })
}

// Settings are the [backends.ssh] options.
type Settings struct {
	// PaddockBinary is the paddock copied to hosts; empty means the running binary.
	PaddockBinary string `toml:"paddock_binary"`
}

// SSH is the backend.
type SSH struct {
	dir, configDir string
	binary         string
	log            *slog.Logger

	mu      sync.Mutex
	links   map[string]*Link
	opening map[string]*sync.Mutex
}

var (
	_ backend.Backend     = (*SSH)(nil)
	_ backend.LimitReader = (*SSH)(nil)
	_ backend.Closer      = (*SSH)(nil)
)

// New constructs the backend; no host is reached until a sandbox needs it.
func New(env backend.Env) (*SSH, error) {
	var s Settings
	if err := backend.DecodeOptions(Name, env.Options, &s); err != nil {
		return nil, err
	}
	if s.PaddockBinary == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("ssh: find this paddock to copy to hosts: %w", err)
		}
		s.PaddockBinary = self
	}
	return &SSH{dir: env.Dir, configDir: env.ConfigDir, binary: s.PaddockBinary, log: slog.Default().With("backend", Name),
		links: map[string]*Link{}, opening: map[string]*sync.Mutex{}}, nil
}

// Name implements backend.Backend.
func (b *SSH) Name() string { return Name }

// Describe implements backend.Backend: the same whatever the hosts.
func (b *SSH) Describe() backend.Description { return description }

// Available implements backend.Backend: there is a host to run on. Hosts are reached
// only when a sandbox needs one.
func (b *SSH) Available(ctx context.Context) error {
	hf, err := LoadHosts(b.configDir)
	if err != nil {
		return &backend.UnavailableError{Backend: Name, Reason: err.Error(), Fix: "fix or remove " + HostsPath(b.configDir)}
	}
	if len(hf.Hosts) == 0 {
		return &backend.UnavailableError{Backend: Name, Reason: "no host to run sandboxes on",
			Fix: "add one: paddock host add NAME ssh://USER@HOST"}
	}
	return nil
}

// Close implements backend.Closer: the connections end; the hosts' sandboxes run on.
func (b *SSH) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, l := range b.links {
		l.Close()
		delete(b.links, name)
	}
}

// record is which host a sandbox is on, kept from its Create to its Destroy.
type record struct {
	Host string `json:"host"`
}

func (b *SSH) recordPath(id backend.ID) string { return filepath.Join(b.dir, string(id)+".json") }

func (b *SSH) hostOf(id backend.ID) (string, error) {
	data, err := os.ReadFile(b.recordPath(id))
	if err != nil {
		return "", err
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil || CheckName(r.Host) != nil {
		return "", fmt.Errorf("ssh: the record of sandbox %s is damaged: %s", id, b.recordPath(id))
	}
	return r.Host, nil
}

// place decides the host of a new sandbox: --host, or the only host there is.
func (b *SSH) place(spec backend.Spec) (string, error) {
	hf, err := LoadHosts(b.configDir)
	if err != nil {
		return "", err
	}
	for k := range spec.Placement {
		if k != PlaceHost {
			return "", fmt.Errorf("the ssh backend takes no %q (it takes --host)", k)
		}
	}
	name := spec.Placement[PlaceHost]
	if name == "" {
		if len(hf.Hosts) != 1 {
			return "", fmt.Errorf("say which host the sandbox runs on: paddock up PATH --host NAME (the hosts: paddock host ls)")
		}
		name = hf.Names()[0]
	}
	if _, ok := hf.Hosts[name]; !ok {
		return "", fmt.Errorf("no host %q: add it with `paddock host add %s ssh://USER@HOST` (the hosts: paddock host ls)", name, name)
	}
	return name, nil
}

// link returns the host's connection, opening one when there is none or it dropped.
func (b *SSH) link(ctx context.Context, name string) (*Link, error) {
	b.mu.Lock()
	lock := b.opening[name]
	if lock == nil {
		lock = &sync.Mutex{}
		b.opening[name] = lock
	}
	b.mu.Unlock()
	lock.Lock()
	defer lock.Unlock()
	b.mu.Lock()
	l := b.links[name]
	b.mu.Unlock()
	if l != nil && !l.Closed() {
		return l, nil
	}
	if l != nil {
		b.log.Info("the connection to the host dropped; connecting again", "host", name)
		l.Close()
	}
	hf, err := LoadHosts(b.configDir)
	if err != nil {
		return nil, err
	}
	h, ok := hf.Hosts[name]
	if !ok {
		return nil, fmt.Errorf("no host %q any more (`paddock host ls`): add it again with `paddock host add %s ssh://USER@HOST`", name, name)
	}
	l, err = Open(ctx, name, h, OpenOptions{Binary: b.binary, Progress: func(s string) { b.log.Info(s, "host", name) }})
	if err != nil {
		return nil, err
	}
	b.log.Info("connected to host", "host", name, "serves", l.Backend, "copied", l.Copied)
	b.mu.Lock()
	b.links[name] = l
	b.mu.Unlock()
	return l, nil
}

// do runs f on the host's link, once more on a new link when the connection was found
// dropped (the calls are idempotent).
func (b *SSH) do(ctx context.Context, host string, f func(*Link) error) error {
	for try := 0; ; try++ {
		l, err := b.link(ctx, host)
		if err != nil {
			return err
		}
		err = f(l)
		if err == nil || !l.Closed() || try == 1 || ctx.Err() != nil {
			return err
		}
	}
}

func (b *SSH) simple(ctx context.Context, op string, id backend.ID) error {
	host, err := b.hostOf(id)
	if err != nil {
		return fmt.Errorf("%w: %s", backend.ErrNotFound, id)
	}
	return b.do(ctx, host, func(l *Link) error {
		_, err := l.call(ctx, request{Op: op, ID: id})
		return err
	})
}

// Create implements backend.Backend: the guest binary goes to the host (when it lacks
// it), then the host's backend makes the sandbox.
func (b *SSH) Create(ctx context.Context, spec backend.Spec) error {
	if spec.Rootfs != "" {
		return errors.New("--rootfs is a directory of this machine: it is not for sandboxes on another host")
	}
	host, err := b.place(spec)
	if err != nil {
		return err
	}
	if have, err := b.hostOf(spec.ID); err == nil && have != host {
		return fmt.Errorf("sandbox %s is on host %s, not %s", spec.ID, have, host)
	}
	// Reached first: a host that cannot be reached (or whose key is refused) has nothing
	// made on it, and no record of it is kept.
	if _, err := b.link(ctx, host); err != nil {
		return err
	}
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return err
	}
	data, _ := json.Marshal(record{Host: host})
	if err := os.WriteFile(b.recordPath(spec.ID), data, 0o600); err != nil {
		return err
	}
	return b.do(ctx, host, func(l *Link) error {
		remote := spec
		remote.Placement, remote.Source = nil, ""
		remote.GuestBinary, remote.GuestSHA256 = "", ""
		if goArch[l.Arch] == hostArch() && spec.GuestBinary != "" {
			path, err := l.putGuest(ctx, spec.GuestBinary, spec.GuestSHA256)
			if err != nil {
				return err
			}
			remote.GuestBinary, remote.GuestSHA256 = path, spec.GuestSHA256
		}
		_, err := l.call(ctx, request{Op: opCreate, Spec: &remote})
		return err
	})
}

// Start implements backend.Backend.
func (b *SSH) Start(ctx context.Context, id backend.ID) error { return b.simple(ctx, opStart, id) }

// Stop implements backend.Backend.
func (b *SSH) Stop(ctx context.Context, id backend.ID) error { return b.simple(ctx, opStop, id) }

// Destroy implements backend.Backend: the host's backend removes the sandbox, then the
// record of where it was goes.
func (b *SSH) Destroy(ctx context.Context, id backend.ID) error {
	if _, err := b.hostOf(id); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := b.simple(ctx, opDestroy, id); err != nil {
		return err
	}
	if err := os.Remove(b.recordPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// State implements backend.Backend. A host that cannot be reached is an error state
// saying so, not a missing sandbox.
func (b *SSH) State(ctx context.Context, id backend.ID) (backend.Status, error) {
	host, err := b.hostOf(id)
	if errors.Is(err, os.ErrNotExist) {
		return backend.Status{State: backend.StateMissing}, nil
	}
	if err != nil {
		return backend.Status{}, err
	}
	var st backend.Status
	err = b.do(ctx, host, func(l *Link) error {
		resp, err := l.call(ctx, request{Op: opState, ID: id})
		if resp.Status != nil {
			st = *resp.Status
		}
		return err
	})
	var re *remoteError
	if err != nil && !errors.As(err, &re) && ctx.Err() == nil {
		return backend.Status{State: backend.StateError, Detail: err.Error()}, nil
	}
	if err == nil && st.Detail != "" {
		st.Detail = "on host " + host + ": " + st.Detail
	}
	return st, err
}

// Limits implements backend.LimitReader, read on the host.
func (b *SSH) Limits(ctx context.Context, id backend.ID) (backend.Limits, error) {
	host, err := b.hostOf(id)
	if err != nil {
		return backend.Limits{}, fmt.Errorf("%w: %s", backend.ErrNotFound, id)
	}
	var lim backend.Limits
	err = b.do(ctx, host, func(l *Link) error {
		resp, err := l.call(ctx, request{Op: opLimits, ID: id})
		if resp.Limits != nil {
			lim = *resp.Limits
		}
		return err
	})
	return lim, err
}

// Dial implements backend.Backend: a new stream over the host's connection, joined
// there to a new connection to the guest.
func (b *SSH) Dial(ctx context.Context, id backend.ID) (net.Conn, error) {
	host, err := b.hostOf(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", backend.ErrNotFound, id)
	}
	var conn net.Conn
	err = b.do(ctx, host, func(l *Link) error {
		var err error
		conn, err = l.dial(ctx, id)
		return err
	})
	return conn, err
}

// hostArch is the architecture of this paddock, and so of its guest; empty off Linux.
func hostArch() string {
	if runtime.GOOS != "linux" {
		return ""
	}
	return runtime.GOARCH
}
