package storage

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/paddockhq/paddock/internal/testenv"
)

// minioVersion is the MinIO scripts/setup.sh installs.
const minioVersion = "github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"

const (
	minioUser     = "paddock-test"
	minioPassword = "paddock-test-secret"
)

func TestS3(t *testing.T) {
	endpoint := startMinIO(t)
	ctx := t.Context()
	opts := S3Options{Endpoint: endpoint, AccessKey: minioUser, SecretKey: minioPassword, Bucket: "paddock", CreateBucket: true}
	var mu sync.Mutex
	n := 0
	testStore(t, func(t *testing.T) backend {
		// Each test gets its own prefix in one bucket: no test sees another's objects,
		// and prefixes are exercised throughout.
		mu.Lock()
		n++
		o := opts
		o.Prefix = fmt.Sprintf("test-%d/", n)
		mu.Unlock()
		s, err := NewS3(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return backend{store: s, overwrite: func(t *testing.T, key string, data []byte) {
			_, err := s.client.PutObject(t.Context(), s.bucket, s.prefix+key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}}
	})

	t.Run("a missing bucket says how to make it", func(t *testing.T) {
		o := opts
		o.Bucket, o.CreateBucket = "absent", false
		if _, err := NewS3(ctx, o); err == nil || !strings.Contains(err.Error(), "mc mb") {
			t.Errorf("NewS3 of a missing bucket: %v, want an error saying how to make it", err)
		}
	})
	t.Run("wrong keys fail at once and stay secret", func(t *testing.T) {
		o := opts
		o.SecretKey = "not-the-secret-key"
		_, err := NewS3(ctx, o)
		if err == nil {
			t.Fatal("NewS3 with a wrong secret key succeeded")
		}
		if strings.Contains(err.Error(), o.SecretKey) {
			t.Errorf("the error shows the secret key: %v", err)
		}
	})
	t.Run("Open an s3:// store", func(t *testing.T) {
		s, err := Open(ctx, "s3://paddock/via-open/deeper", S3Options{Endpoint: endpoint, AccessKey: minioUser, SecretKey: minioPassword})
		if err != nil {
			t.Fatal(err)
		}
		put(t, ctx, s, "k", "v")
		if got := get(t, ctx, s, "k"); got != "v" {
			t.Errorf("Get = %q", got)
		}
		if str := s.String(); !strings.Contains(str, "s3://paddock/via-open/deeper/") || strings.Contains(str, minioPassword) {
			t.Errorf("String() = %q, want the bucket and prefix and no secret", str)
		}
		// The object is Prefix+key in the bucket.
		whole, err := NewS3(ctx, S3Options{Endpoint: endpoint, AccessKey: minioUser, SecretKey: minioPassword, Bucket: "paddock"})
		if err != nil {
			t.Fatal(err)
		}
		if got := get(t, ctx, whole, "via-open/deeper/k"); got != "v" {
			t.Errorf("the object under the bucket's top = %q", got)
		}
	})
}

func TestParseEndpoint(t *testing.T) {
	for _, tc := range []struct {
		endpoint, host string
		secure         bool
		wantErr        string
	}{
		{"", "s3.amazonaws.com", true, ""},
		{"http://127.0.0.1:9000", "127.0.0.1:9000", false, ""},
		{"https://s3.example.com/", "s3.example.com", true, ""},
		{"minio.lan:9000", "minio.lan:9000", true, ""},
		{"ftp://x", "", false, "scheme must be http or https"},
		{"https://user:pass@x", "", false, "keys do not belong"},
		{"https://x/bucket", "", false, "no path"},
	} {
		host, secure, err := parseEndpoint(tc.endpoint)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseEndpoint(%q): %v, want an error saying %q", tc.endpoint, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "pass@") {
				t.Errorf("parseEndpoint(%q): the error shows the password: %v", tc.endpoint, err)
			}
			continue
		}
		if err != nil || host != tc.host || secure != tc.secure {
			t.Errorf("parseEndpoint(%q) = %q, %v, %v; want %q, %v", tc.endpoint, host, secure, err, tc.host, tc.secure)
		}
	}
}

// startMinIO runs a MinIO server for the test on a fresh directory and returns its
// endpoint; it is stopped when the test ends.
func startMinIO(t *testing.T) string {
	t.Helper()
	bin := minioBinary(t)
	addr, console := freeAddr(t), freeAddr(t)
	var log bytes.Buffer
	cmd := exec.Command(bin, "server", t.TempDir(), "--address", addr, "--console-address", console, "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+minioUser, "MINIO_ROOT_PASSWORD="+minioPassword, "MINIO_BROWSER=off",
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
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/minio/health/live", nil)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return endpoint
			}
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

// minioBinary finds MinIO: $PADDOCK_MINIO, else minio on PATH, else the one `go install`
// put in GOPATH/bin. Without it the test skips (fails, under CI).
func minioBinary(t *testing.T) string {
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
		"run scripts/setup.sh, or `go install "+minioVersion+"`, or set PADDOCK_MINIO to a minio binary")
	return ""
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestSetupPinsMinIO keeps scripts/setup.sh installing the MinIO this test names.
func TestSetupPinsMinIO(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "scripts", "setup.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`github\.com/minio/minio@v[^\s"]+`).Find(data)
	if string(m) != minioVersion {
		t.Errorf("scripts/setup.sh installs %q, the tests name %q", m, minioVersion)
	}
}
