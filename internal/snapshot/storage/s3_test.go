package storage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/paddockhq/paddock/internal/snapshot/storage/miniotest"
)

const (
	minioVersion  = miniotest.Version
	minioUser     = miniotest.User
	minioPassword = miniotest.Password
)

func startMinIO(t *testing.T) string { return miniotest.Start(t) }

func TestS3(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestSetupPinsMinIO keeps scripts/setup.sh installing the MinIO this test names.
func TestSetupPinsMinIO(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "scripts", "setup.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`github\.com/minio/minio@v[^\s"]+`).Find(data)
	if string(m) != minioVersion {
		t.Errorf("scripts/setup.sh installs %q, the tests name %q", m, minioVersion)
	}
}
