package creds

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Some agents reach the credential proxy only over HTTPS: Codex in ChatGPT mode wants
// its ChatGPT backend at an https origin. So the proxy's port in a sandbox speaks both:
// a connection that opens with a TLS handshake gets TLS, with a certificate for the
// loopback addresses signed by the daemon's own CA, whose certificate (never its key)
// the agent is given to trust.

// ProxyCA is the daemon's CA for the credential proxy's loopback certificate.
type ProxyCA struct {
	// PEM is the CA's certificate, for the agents that must trust it.
	PEM []byte
	// Config serves the proxy's loopback certificate.
	Config *tls.Config
}

// LoadProxyCA reads the CA kept in dir (ca.pem, ca-key.pem; made there, mode 0600, the
// first time) and issues the proxy a certificate for 127.0.0.1, ::1 and localhost.
func LoadProxyCA(dir string) (*ProxyCA, error) {
	certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	certPEM, err1 := os.ReadFile(certFile)
	keyPEM, err2 := os.ReadFile(keyFile)
	if errors.Is(err1, os.ErrNotExist) || errors.Is(err2, os.ErrNotExist) {
		if certPEM, keyPEM, err1 = newCA(); err1 != nil {
			return nil, err1
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
			return nil, err
		}
		if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
			return nil, err
		}
	} else if err1 != nil || err2 != nil {
		return nil, errors.Join(err1, err2)
	}
	ca, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the credential proxy's CA in %s: %w (remove the directory to make a new one)", dir, err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "paddock credential proxy"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"},
		Certificates: []tls.Certificate{{Certificate: [][]byte{der, caCert.Raw}, PrivateKey: key}}}
	return &ProxyCA{PEM: certPEM, Config: cfg}, nil
}

func newCA() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "paddock credential proxy CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign,
		// It signs certificates for the loopback addresses only.
		PermittedDNSDomainsCritical: true, PermittedDNSDomains: []string{"localhost"},
		PermittedIPRanges: []*net.IPNet{{IP: net.IPv4(127, 0, 0, 0), Mask: net.CIDRMask(8, 32)}, {IP: net.IPv6loopback, Mask: net.CIDRMask(128, 128)}},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

// SniffTLS wraps ln so that each connection opening with a TLS handshake is served TLS
// with cfg, and every other is passed on as it is.
func SniffTLS(ln net.Listener, cfg *tls.Config) net.Listener {
	s := &sniffListener{Listener: ln, cfg: cfg, conns: make(chan net.Conn), done: make(chan struct{})}
	go s.loop()
	return s
}

type sniffListener struct {
	net.Listener
	cfg   *tls.Config
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	err   error
}

func (s *sniffListener) loop() {
	for {
		c, err := s.Listener.Accept()
		if err != nil {
			s.closeWith(err)
			return
		}
		go s.sniff(c)
	}
}

func (s *sniffListener) sniff(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	var out net.Conn = &peekedConn{Conn: c, r: br}
	if first[0] == 0x16 { // a TLS handshake record
		out = tls.Server(out, s.cfg)
	}
	select {
	case s.conns <- out:
	case <-s.done:
		out.Close()
	}
}

func (s *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.done:
		if s.err != nil {
			return nil, s.err
		}
		return nil, net.ErrClosed
	}
}

func (s *sniffListener) Close() error { return s.closeWith(nil) }

func (s *sniffListener) closeWith(cause error) error {
	var err error
	s.once.Do(func() {
		s.err = cause
		close(s.done)
		err = s.Listener.Close()
	})
	return err
}

// peekedConn reads first what was peeked.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
