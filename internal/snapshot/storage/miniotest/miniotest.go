// Package miniotest runs a real MinIO server for tests of paddock's S3 store: the
// binary scripts/setup.sh builds from the Go module proxy.
package miniotest

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/paddockhq/paddock/internal/testenv"
)

// Version is the MinIO scripts/setup.sh installs.
const Version = "github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"

// User and Password are the root credentials of the servers Start runs.
const (
	User     = "paddock-test"
	Password = "paddock-test-secret"
)

// Start runs a MinIO server for the test on a fresh directory and returns its
// endpoint; it is stopped when the test ends.
func Start(t testing.TB) string {
	t.Helper()
	bin := binary(t)
	addr, console := freeAddr(t), freeAddr(t)
	var log bytes.Buffer
	cmd := exec.Command(bin, "server", t.TempDir(), "--address", addr, "--console-address", console, "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+User, "MINIO_ROOT_PASSWORD="+Password, "MINIO_BROWSER=off",
		"MINIO_UPDATE=off", "MINIO_CI_CD=1")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start minio: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Logf("stop minio: %v", err)
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	endpoint := "http://" + addr
	// Ready when it serves S3 requests: its liveness answers earlier, while requests still
	// get "Server not initialized yet".
	c, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(User, Password, "")})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err := c.ListBuckets(ctx)
		cancel()
		if err == nil {
			return endpoint
		}
		select {
		case err := <-exited:
			t.Fatalf("minio exited (%v) before it answered:\n%s", err, log.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("minio did not answer on %s within a minute:\n%s", endpoint, log.String())
		}
	}
}

// binary finds MinIO: $PADDOCK_MINIO, else minio on PATH, else the one `go install`
// put in GOPATH/bin. Without it the test skips (fails, under CI).
func binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("PADDOCK_MINIO"); p != "" {
		return p
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			p := filepath.Join(dir, "bin", "minio")
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
				return p
			}
		}
	}
	testenv.Missing(t, "minio is not installed",
		"run scripts/setup.sh, or `go install "+Version+"`, or set PADDOCK_MINIO to a minio binary")
	return ""
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Bucket makes a bucket on the server at endpoint, as an operator would before pointing
// paddock at it.
func Bucket(t testing.TB, endpoint, name string) {
	t.Helper()
	host := strings.TrimPrefix(endpoint, "http://")
	c, err := minio.New(host, &minio.Options{Creds: credentials.NewStaticV4(User, Password, "")})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.MakeBucket(t.Context(), name, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("make bucket %s: %v", name, err)
	}
}
