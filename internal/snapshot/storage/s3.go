package storage

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"slices"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Options say which S3 bucket (AWS, MinIO, Garage, R2, ...) an S3 store is and how to
// reach it.
type S3Options struct {
	// Endpoint is the server: "http://127.0.0.1:9000", "https://s3.example.com", or a
	// bare "host[:port]", which means https. Empty means AWS (s3.amazonaws.com).
	Endpoint string
	// Bucket holds the objects; it must exist unless CreateBucket is set.
	Bucket string
	// Prefix is prepended to every key ("paddock" keeps keys under "paddock/"), so
	// that one bucket may serve several stores. Empty means the bucket's top.
	Prefix string
	// AccessKey is the key id requests are signed with; with SecretKey, both empty
	// means anonymous requests.
	AccessKey string
	// SecretKey is the secret requests are signed with. It appears in no message.
	SecretKey string
	// Region is the bucket's region; empty lets the client find it out.
	Region string
	// Insecure skips checking the server's TLS certificate (a self-signed one). It
	// never turns https into http: the endpoint's scheme says that.
	Insecure bool
	// CreateBucket makes the bucket when it does not exist, instead of failing.
	CreateBucket bool
}

// S3 is a Store in an S3 bucket: each object is the bucket's object Prefix+key. S3's
// PutObject makes an object visible only once whole, as Put requires.
type S3 struct {
	client   *minio.Client
	bucket   string
	prefix   string // "" or ending in "/"
	location string
}

var _ Store = (*S3)(nil)

// NewS3 connects to the bucket of opts and checks that it exists (or makes it, with
// CreateBucket), so that a mistyped name or a wrong key fails here rather than in the
// middle of a snapshot.
func NewS3(ctx context.Context, opts S3Options) (*S3, error) {
	host, secure, err := parseEndpoint(opts.Endpoint)
	if err != nil {
		return nil, err
	}
	prefix := strings.Trim(opts.Prefix, "/")
	if prefix != "" {
		if err := CheckKey(prefix); err != nil {
			return nil, fmt.Errorf("s3 prefix: %w", err)
		}
		prefix += "/"
	}
	location := fmt.Sprintf("s3://%s/%s (%s)", opts.Bucket, prefix, host)
	if opts.Bucket == "" {
		return nil, fmt.Errorf("s3 store at %s: no bucket", host)
	}
	transport, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("s3 store %s: %w", location, err)
	}
	if opts.Insecure {
		if transport.TLSClientConfig == nil {
			transport.TLSClientConfig = &tls.Config{}
		}
		transport.TLSClientConfig.InsecureSkipVerify = true
	}
	client, err := minio.New(host, &minio.Options{
		Creds:     credentials.NewStaticV4(opts.AccessKey, opts.SecretKey, ""),
		Secure:    secure,
		Region:    opts.Region,
		Transport: transport,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 store %s: %w", location, err)
	}
	s := &S3{client: client, bucket: opts.Bucket, prefix: prefix, location: location}
	exists, err := client.BucketExists(ctx, opts.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3 store %s: check the bucket: %w", location, err)
	}
	if exists {
		return s, nil
	}
	if !opts.CreateBucket {
		return nil, fmt.Errorf("s3 store %s: bucket %q does not exist: make it with `mc mb ALIAS/%s` or in the provider's console",
			location, opts.Bucket, opts.Bucket)
	}
	if err := client.MakeBucket(ctx, opts.Bucket, minio.MakeBucketOptions{Region: opts.Region}); err != nil {
		return nil, fmt.Errorf("s3 store %s: make bucket: %w", location, err)
	}
	return s, nil
}

// parseEndpoint splits an endpoint into the host[:port] the client takes and whether it
// speaks TLS.
func parseEndpoint(endpoint string) (host string, secure bool, err error) {
	if endpoint == "" {
		return "s3.amazonaws.com", true, nil
	}
	if !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", false, fmt.Errorf("s3 endpoint: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", false, fmt.Errorf("s3 endpoint %q: the scheme must be http or https", u.Redacted())
	case u.User != nil:
		return "", false, fmt.Errorf("s3 endpoint %q: keys do not belong in the endpoint", u.Redacted())
	case u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "":
		return "", false, fmt.Errorf("s3 endpoint %q must be scheme://host[:port], with no path", u.Redacted())
	}
	return u.Host, u.Scheme == "https", nil
}

// String names the bucket, prefix and server.
func (s *S3) String() string { return s.location }

// Put uploads r with PutObject, which S3 makes visible only when complete; an upload
// cut off (r fails, ctx ends) is aborted and leaves nothing.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := CheckKey(key); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	_, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, r, size,
		minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return fmt.Errorf("put %s in %s: %w", key, s.location, err)
	}
	return nil
}

// Get opens the object; its first request is made here, so a missing object is an
// error now rather than at the first Read.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := CheckKey(key); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	obj, err := s.client.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err == nil {
		_, err = obj.Stat()
		if err != nil {
			obj.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("get %s from %s: %w", key, s.location, s3Error(err))
	}
	return obj, nil
}

// Stat returns the object's size.
func (s *S3) Stat(ctx context.Context, key string) (int64, error) {
	if err := CheckKey(key); err != nil {
		return 0, fmt.Errorf("stat: %w", err)
	}
	info, err := s.client.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{})
	if err != nil {
		return 0, fmt.Errorf("stat %s in %s: %w", key, s.location, s3Error(err))
	}
	return info.Size, nil
}

// List lists the bucket recursively under Prefix+prefix. Objects whose names are not
// keys (put there by something else) are not listed.
func (s *S3) List(ctx context.Context, prefix string) ([]string, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	var keys []string
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("list %s in %s: %w", prefix, s.location, obj.Err)
		}
		key, ok := strings.CutPrefix(obj.Key, s.prefix)
		if ok && CheckKey(key) == nil {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// Delete removes the object; S3 does not mind a missing one.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if err := s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("delete %s in %s: %w", key, s.location, s3Error(err))
	}
	return nil
}

// s3Error makes S3's "no such key" match fs.ErrNotExist.
func s3Error(err error) error {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && resp.Code == minio.NoSuchKey {
		return fmt.Errorf("%w (%w)", fs.ErrNotExist, err)
	}
	return err
}
