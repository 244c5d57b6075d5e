package vagrant_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/vagrant"
	"github.com/paddockhq/paddock/internal/backend/vagrant/vagranttest"
	"github.com/paddockhq/paddock/internal/guestclient"
)

// BenchmarkUp measures a sandbox brought up to its first exec on Vagrant's docker
// provider (Create, Start: vagrant up, the guest installed and started over SSH, then
// a connection and `true`) against `vagrant up` of the same Vagrantfile, in the same run.
func BenchmarkUp(b *testing.B) {
	opts := vagranttest.DockerProvider(b)
	bk, err := vagrant.New(backend.Env{Dir: b.TempDir(), Options: opts})
	if err != nil {
		b.Fatal(err)
	}
	agent := guestBinary(b)
	ctx := context.Background()
	var ours, base time.Duration
	for i := range b.N {
		id := backend.ID(fmt.Sprintf("bu%d%d", os.Getpid()%1000, i))
		start := time.Now()
		if err := bk.Create(ctx, backend.Spec{ID: id, Name: "bench", GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
			b.Fatal(err)
		}
		if err := bk.Start(ctx, id); err != nil {
			b.Fatal(err)
		}
		execTrue(b, bk, id)
		ours += time.Since(start)
		bk.Destroy(ctx, id)
		bk.WaitRemovals()

		dir := b.TempDir()
		data, _ := os.ReadFile(opts["vagrantfile"].(string))
		os.WriteFile(filepath.Join(dir, "Vagrantfile"), data, 0o644)
		start = time.Now()
		vagrantCmd(b, dir, "up", "--provider", "docker")
		base += time.Since(start)
		vagrantCmd(b, dir, "destroy", "-f")
	}
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "up-ms")
	b.ReportMetric(float64(base.Milliseconds())/float64(b.N), "vagrant-up-ms")
	b.ReportMetric(float64((ours-base).Milliseconds())/float64(b.N), "overhead-ms")
}

// BenchmarkExec measures `true` through the guest over the kept SSH connection against
// `vagrant ssh -c true`, on the same machine, in the same run.
func BenchmarkExec(b *testing.B) {
	opts := vagranttest.DockerProvider(b)
	dir := b.TempDir()
	bk, err := vagrant.New(backend.Env{Dir: dir, Options: opts})
	if err != nil {
		b.Fatal(err)
	}
	agent := guestBinary(b)
	ctx := context.Background()
	id := backend.ID(fmt.Sprintf("be%d", os.Getpid()%10000))
	if err := bk.Create(ctx, backend.Spec{ID: id, Name: "bench", GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
		b.Fatal(err)
	}
	defer bk.WaitRemovals()
	defer bk.Destroy(ctx, id)
	if err := bk.Start(ctx, id); err != nil {
		b.Fatal(err)
	}
	c := connect(b, bk, id)
	defer c.Close()
	var ours, base time.Duration
	for range b.N {
		start := time.Now()
		if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
			b.Fatal(code, err)
		}
		ours += time.Since(start)
		start = time.Now()
		vagrantCmd(b, filepath.Join(dir, string(id)), "ssh", "-c", "true")
		base += time.Since(start)
	}
	b.ReportMetric(float64(ours.Microseconds())/float64(b.N), "exec-us")
	b.ReportMetric(float64(base.Microseconds())/float64(b.N), "vagrant-ssh-us")
	b.ReportMetric(float64(base)/float64(ours), "x-faster")
}

func execTrue(b *testing.B, bk *vagrant.Vagrant, id backend.ID) {
	c := connect(b, bk, id)
	defer c.Close()
	if code, err := c.Exec(context.Background(), guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
		b.Fatal(code, err)
	}
}

func vagrantCmd(b *testing.B, dir string, args ...string) {
	cmd := exec.Command("vagrant", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VAGRANT_CHECKPOINT_DISABLE=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("vagrant %v: %v %s", args, err, out)
	}
}
