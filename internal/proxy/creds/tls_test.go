package creds

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// The proxy's port serves plain HTTP and TLS alike; the TLS certificate is trusted with
// the daemon's CA only, for the loopback names only; the CA is kept for the next start,
// its key private.
func TestSniffTLSServesBothOnOnePort(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "proxy-ca")
	ca, err := LoadProxyCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			io.WriteString(w, "tls")
		} else {
			io.WriteString(w, "plain")
		}
	})}
	go srv.Serve(SniffTLS(ln, ca.Config))
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	get := func(url string, roots *x509.CertPool, name string) (string, error) {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: name}}}
		resp, err := c.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), nil
	}
	if got, err := get("http://"+addr+"/", nil, ""); err != nil || got != "plain" {
		t.Fatalf("plain: %q %v", got, err)
	}
	if got, err := get("https://"+addr+"/", pool, ""); err != nil || got != "tls" {
		t.Fatalf("tls: %q %v", got, err)
	}
	if _, err := get("https://"+addr+"/", nil, ""); err == nil {
		t.Fatal("the proxy's certificate was trusted without the daemon's CA")
	}
	if _, err := get("https://"+addr+"/", pool, "chatgpt.com"); err == nil {
		t.Fatal("the proxy's certificate was good for another name")
	}
	if fi, err := os.Stat(filepath.Join(dir, "ca-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the CA's key: %v %v", fi, err)
	}
	again, err := LoadProxyCA(dir)
	if err != nil || string(again.PEM) != string(ca.PEM) {
		t.Fatalf("the CA was not kept: %v", err)
	}
}
