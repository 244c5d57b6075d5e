// Package daemon wires the long-lived process behind `paddock serve`: it reads the
// config, opens the state, constructs the backends, reconnects to the sandboxes that
// are still running, and serves the API on a unix socket (and, after `paddock web`, on
// TCP) until told to stop.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/paddockhq/paddock/internal/api"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/autosync"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/checkpoint"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/doctor"
	"github.com/paddockhq/paddock/internal/events/eventlog"
	"github.com/paddockhq/paddock/internal/flightrec"
	"github.com/paddockhq/paddock/internal/ghauth"
	"github.com/paddockhq/paddock/internal/github"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/imagebuild"
	"github.com/paddockhq/paddock/internal/metering"
	"github.com/paddockhq/paddock/internal/netpolicy"
	"github.com/paddockhq/paddock/internal/notify"
	"github.com/paddockhq/paddock/internal/proxy/creds"
	"github.com/paddockhq/paddock/internal/proxy/keyring"
	"github.com/paddockhq/paddock/internal/runs"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/snapshot"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/task"

	_ "github.com/paddockhq/paddock/internal/agents/all"         // registers every agent adapter
	_ "github.com/paddockhq/paddock/internal/backend/bwrap"      // registers the bwrap backend
	_ "github.com/paddockhq/paddock/internal/backend/docker"     // registers the docker backend
	_ "github.com/paddockhq/paddock/internal/backend/kubernetes" // registers the kubernetes backend
	_ "github.com/paddockhq/paddock/internal/backend/microvm"    // registers the microvm backend
	_ "github.com/paddockhq/paddock/internal/backend/sshhost"    // registers the ssh backend
	_ "github.com/paddockhq/paddock/internal/backend/vagrant"    // registers the vagrant backend
)

// ErrAlreadyRunning is returned when another daemon holds this PADDOCK_HOME.
var ErrAlreadyRunning = errors.New("a paddock daemon is already running for this PADDOCK_HOME")

// Options configure Run.
type Options struct {
	Paths   config.Paths
	Version string
	Logger  *slog.Logger
	// Ready, when set, is called once the socket accepts connections.
	Ready func()
	// NoFlightRecord keeps no sandbox's flight record: only for a benchmark to weigh the
	// record against none in the same run; paddock serve never sets it.
	NoFlightRecord bool
}

// Run runs the daemon until ctx is done or a client asks it to stop. Sandboxes keep
// running after it returns.
func Run(ctx context.Context, opts Options) error {
	log := opts.Logger
	p := opts.Paths
	if err := p.MkdirAll(); err != nil {
		return err
	}
	unlock, err := lockFile(filepath.Join(p.State, "daemon.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	var closers []backend.Closer
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()

	cfg, err := config.Load(p.Config)
	if err != nil {
		return err
	}
	guestSrc, err := GuestSource(cfg)
	if err != nil {
		return err
	}
	guest, err := sandbox.InstallGuest(guestSrc, filepath.Join(p.Cache, "agent"))
	if err != nil {
		return err
	}

	st, err := store.Open(ctx, p.DB())
	if err != nil {
		return err
	}
	defer st.Close()

	backends := map[string]backend.Backend{}
	for _, name := range backend.Names() {
		b, err := backend.New(name, backend.Env{Dir: filepath.Join(p.Sandboxes, name), Options: cfg.Backends[name],
			ConfigDir: filepath.Dir(p.Config), Hide: []string{filepath.Dir(p.Config), config.SystemConfigDir}})
		if err != nil {
			return fmt.Errorf("backend %s: %w", name, err)
		}
		backends[name] = b
		if c, ok := b.(backend.Closer); ok {
			closers = append(closers, c)
		}
	}
	for name := range cfg.Backends {
		if _, ok := backends[name]; !ok {
			return fmt.Errorf("config %s: [backends.%s]: no such backend (known: %v)", p.Config, name, backend.Names())
		}
	}

	credsProxy, err := credentialProxy(cfg, p.KeyDir(), p.LoginDir(), filepath.Join(filepath.Dir(p.Config), "proxy-ca"), log)
	if err != nil {
		return fmt.Errorf("config %s: %w", p.Config, err)
	}
	flight, err := flightrec.New(flightrec.Options{Dir: filepath.Join(p.State, "records"), Heads: st, Logger: log.With("part", "flight")})
	if err != nil {
		return err
	}
	defer flight.Close() // after the services below, which record into it, have stopped
	if opts.NoFlightRecord {
		flight = nil
	}
	evlog := eventlog.New(eventlog.Options{Store: st, Flight: flight, Logger: log})
	egressPolicy := netpolicy.New(netpolicy.Options{Store: st, Sandboxes: sandbox.Records{Store: st, Events: evlog}, Logger: log})
	svc := sandbox.New(sandbox.Options{Store: st, Events: evlog, Net: egressPolicy, Backends: backends, DefaultBackend: cfg.DefaultBackend,
		Guest: guest, Version: opts.Version, Logger: log, Creds: credsProxy, MCP: cfg.MCP,
		ReposDir: filepath.Join(p.Cache, "repos"), Alarms: cfg.Alarms, Flight: flight})
	defer svc.Close()
	prices, err := metering.NewPrices(cfg.Prices)
	if err != nil {
		return fmt.Errorf("config %s: %w", p.Config, err)
	}
	meter, err := metering.New(ctx, metering.Options{Store: st, Prices: prices, Default: cfg.Budget, Emit: evlog.Emit,
		Logger: log.With("part", "metering")})
	if err != nil {
		return err
	}
	defer meter.Close()
	credsProxy.SetMeter(meter)
	// The session service keeps the sessions of the sandboxes reconcile starts again.
	keys := keyring.New(credsProxy)
	syncs := autosync.New(autosync.Options{Store: st, Bus: evlog.Bus(), Sandboxes: svc.Host(), Logger: log})
	sessions := session.New(svc, keys, log)
	go sessions.WatchTranscripts(ctx, evlog.Bus())
	go sessions.ForgetOnStatus(ctx, evlog.Bus())
	svc.Reconcile(ctx)

	ln, err := listen(p.Socket)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var once sync.Once
	apiSrv := api.NewServer(svc, sessions, api.Services{Keys: keys, Images: imagebuild.NewService(backends),
		Syncs: syncs, Doctor: doctor.New(backends, svc), Net: egressPolicy}, wire.Version{Version: opts.Version, Protocol: guestproto.Protocol,
		PID: os.Getpid(), Guest: guest.SHA256}, log, func() { once.Do(stop) })
	web := newWebListener(apiSrv, st, log)
	apiSrv.EnableWeb(web)
	apiSrv.EnableMetering(meter)
	if gh := cfg.Auth.GitHub; gh.Enabled() {
		secret, err := gh.ClientSecret()
		if err != nil {
			return fmt.Errorf("config %s: %w", p.Config, err)
		}
		apiSrv.EnableTeam(api.TeamOptions{
			GitHub:  ghauth.New(ghauth.Config{ClientID: gh.ClientID, ClientSecret: secret, Org: gh.Org, WebURL: gh.WebURL, APIURL: gh.APIURL}),
			IsAdmin: gh.IsAdmin,
			Recheck: gh.RecheckEvery(),
		})
		log.Info("members of a GitHub organization may sign in over TCP", "org", gh.Org, "admins", gh.Admins)
	}
	notifier, err := notify.New(notify.Options{Config: cfg.Notify, Store: st, StateDir: p.State, Logger: log.With("part", "notify"),
		Getenv: os.Getenv, BaseURL: func() string { return web.Status().URL }})
	if err != nil {
		return err
	}
	apiSrv.EnableNotify(notifier)
	activity := snapshot.NewActivity()
	snapshots, snapErr := openSnapshots(ctx, cfg.Backup, p, svc, sessions, log)
	apiSrv.EnableSnapshots(snapshots, snapErr)
	if snapshots != nil {
		svc.SetSnapshots(func(ctx context.Context, name string) (string, time.Time, bool) {
			m, err := snapshots.Newest(ctx, name)
			if err != nil || m == nil {
				return "", time.Time{}, false
			}
			return m.ID, m.Created, true
		})
		go snapshots.Every(ctx, cfg.Backup.Every.Duration)
		apiSrv.EnableActivity(activity)
		go snapshots.IdleStop(ctx, cfg.IdleStop.Duration, activity)
	} else {
		log.Warn("idle stops are off: they take a final snapshot first, and snapshots are off")
	}
	runOpts := runs.Options{Sandboxes: svc, Store: st, Creds: credsProxy, Config: cfg.Run, Logger: log.With("part", "runs")}
	if snapshots != nil {
		runOpts.Hold = activity.Hold
	}
	apiSrv.EnableRuns(runs.New(ctx, runOpts))
	taskOpts := task.Options{Sandboxes: svc, Sessions: sessions, Store: st, Bus: evlog.Bus(), Emit: evlog.Emit,
		Logger: log.With("part", "tasks"), GitHub: task.GitHub{APIURL: cfg.Auth.GitHub.APIURL, Token: github.TokenFromEnv(os.Getenv)}}
	// Pull requests go to github.com, or to the GitHub Enterprise server sign-ins go to,
	// or to the one the environment names.
	if u := os.Getenv(github.EnvAPIURL); u != "" {
		taskOpts.GitHub.APIURL = u
	}
	if taskOpts.GitHub.HTTP, taskOpts.GitHub.GitEnv, err = github.TrustFromEnv(os.Getenv); err != nil {
		return err
	}
	if snapshots != nil {
		taskOpts.FinalSnapshot = func(ctx context.Context, name string, progress func(string)) error {
			_, err := snapshots.Take(ctx, name, snapshot.TakeOptions{Note: "before task rm"}, progress)
			return err
		}
	}
	tasks := task.New(ctx, taskOpts)
	tasks.Start(ctx)
	defer func() { stop(); tasks.Wait() }() // before the sandboxes and the state close
	apiSrv.EnableTasks(tasks, nil)
	checkpoints := checkpoint.New(checkpoint.Options{Sandboxes: svc, Sessions: sessions, Store: st, Bus: evlog.Bus(), Emit: evlog.Emit,
		Logger: log.With("part", "checkpoints"), Keep: cfg.Checkpoints.Keep, MaxBytes: cfg.Checkpoints.MaxMB << 20, Exclude: cfg.Checkpoints.Exclude})
	checkpoints.Start(ctx)
	defer func() { stop(); checkpoints.Wait() }() // before the sandboxes and the state close
	apiSrv.EnableCheckpoints(checkpoints, nil)
	srv := &http.Server{
		Handler:           apiSrv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
	}
	web.handler = srv.Handler // the TCP listener serves the same handler
	web.restore(ctx)
	log.Info("daemon listening", "socket", p.Socket, "pid", os.Getpid(), "version", opts.Version, "backends", backend.Names())
	if opts.Ready != nil {
		opts.Ready()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	go syncs.Run(ctx)
	notifier.Start(ctx, evlog.Bus())
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	log.Info("daemon stopping; sandboxes keep running")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	web.close(sctx)
	srv.Shutdown(sctx)
	os.Remove(p.Socket)
	return nil
}

// GuestName is the small guest's file name, beside paddock's own (`make build` makes both).
const GuestName = "paddock-guest"

// GuestSource is the guest binary the daemon injects: the one the environment or the
// config names (config.Config.GuestSource), else GuestBinary of this executable.
func GuestSource(cfg config.Config) (string, error) {
	if src := cfg.GuestSource(); src != "" {
		return src, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find this executable to inject as the guest: %w", err)
	}
	return GuestBinary(self), nil
}

// GuestBinary is what the daemon injects as the guest when the config names none: the
// small guest beside self when there is one, else self (the whole paddock is a guest too).
func GuestBinary(self string) string {
	small := filepath.Join(filepath.Dir(self), GuestName)
	if fi, err := os.Stat(small); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return small
	}
	return self
}

// credentialProxy builds the credential proxy from the config's providers, the daemon's
// environment and the subscription logins in loginDir, with a route for each http MCP
// server that needs headers, speaking TLS too with a certificate of the CA in caDir.
func credentialProxy(cfg config.Config, keyDir, loginDir, caDir string, log *slog.Logger) (*creds.Proxy, error) {
	providers, err := creds.Providers(cfg.Providers, os.Getenv, keyDir)
	if err != nil {
		return nil, err
	}
	for name, m := range cfg.MCP {
		if m.Transport != "http" || len(m.Headers) == 0 {
			continue
		}
		pr, err := creds.MCPProvider(name, m.URL, m.Headers, os.Getenv)
		if err != nil {
			return nil, err
		}
		providers[pr.Name] = pr
	}
	proxy := creds.New(providers, nil, log)
	proxy.SetLogins(creds.NewLogins(loginDir, cfg.Providers, os.Getenv, nil))
	ca, err := creds.LoadProxyCA(caDir)
	if err != nil {
		return nil, fmt.Errorf("the credential proxy's TLS: %w", err)
	}
	proxy.SetTLS(ca)
	return proxy, nil
}

// listen opens the API socket, private to the user. Holding the daemon lock means any
// socket file left behind is stale.
func listen(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// lockFile takes an exclusive lock that the kernel drops when the process dies, so a
// daemon killed with -9 never blocks the next.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrAlreadyRunning
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return func() { f.Close() }, nil
}
