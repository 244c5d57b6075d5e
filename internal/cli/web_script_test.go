package cli_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// webEnv reads what `paddock web` printed (webenv FILE) and sets WEB_URL (the base URL),
// WEB_LOGIN (the login URL) and WEB_CODE (its code).
func webEnv(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: webenv FILE")
	}
	out := ts.ReadFile(args[0])
	m := regexp.MustCompile(`(https?://[^\s/]+)/login\?code=([0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil {
		ts.Fatalf("no login URL in %s:\n%s", args[0], out)
	}
	ts.Setenv("WEB_URL", m[1])
	ts.Setenv("WEB_LOGIN", m[0])
	ts.Setenv("WEB_CODE", m[2])
}

// webReq makes one request, as a browser or a phone would, and prints "HTTP STATUS",
// the Location and Set-Cookie headers, then the body:
//
//	webreq [-token FILE] [-cookie FILE] [-save-cookie FILE] [-cacert FILE] [-unix SOCKET]
//	       [-H 'Name: value']... [-form k=v] [-json FILE] METHOD URL
//	webreq -ws [same flags] URL ARGV...      an exec WebSocket running ARGV; prints its output and exit code
//
// A request that gets no answer prints "error: ...".
func webReq(ts *testscript.TestScript, neg bool, args []string) {
	hdr := http.Header{}
	var saveCookie, form, unix string
	var ws bool
	tr := &http.Transport{}
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		flag := args[0]
		if flag == "-ws" {
			ws, args = true, args[1:]
			continue
		}
		if len(args) < 2 {
			ts.Fatalf("webreq: %s needs a value", flag)
		}
		v := args[1]
		args = args[2:]
		switch flag {
		case "-token":
			hdr.Set("Authorization", "Bearer "+strings.TrimSpace(ts.ReadFile(v)))
		case "-cookie":
			hdr.Set("Cookie", strings.TrimSpace(ts.ReadFile(v)))
		case "-save-cookie":
			saveCookie = ts.MkAbs(v)
		case "-cacert":
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM([]byte(ts.ReadFile(v))) {
				ts.Fatalf("webreq: no certificate in %s", v)
			}
			tr.TLSClientConfig = &tls.Config{RootCAs: pool}
		case "-unix":
			unix = v
			tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", unix)
			}
		case "-H":
			name, value, _ := strings.Cut(v, ":")
			hdr.Set(name, strings.TrimSpace(value))
		case "-form":
			form, hdr["Content-Type"] = v, []string{"application/x-www-form-urlencoded"}
		case "-json":
			form, hdr["Content-Type"] = ts.ReadFile(v), []string{"application/json"}
		default:
			ts.Fatalf("webreq: unknown flag %s", flag)
		}
	}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if ws {
		if len(args) < 2 {
			ts.Fatalf("usage: webreq -ws [flags] URL ARGV...")
		}
		webExec(ts, client, hdr, args[0], args[1:])
		return
	}
	if len(args) != 2 {
		ts.Fatalf("usage: webreq [flags] METHOD URL")
	}
	req, err := http.NewRequest(args[0], args[1], strings.NewReader(form))
	ts.Check(err)
	req.Header = hdr
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(ts.Stdout(), "error: %v\n", err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Fprintf(ts.Stdout(), "HTTP %d\n", resp.StatusCode)
	if loc := resp.Header.Get("Location"); loc != "" {
		fmt.Fprintf(ts.Stdout(), "Location: %s\n", loc)
	}
	for _, c := range resp.Header.Values("Set-Cookie") {
		fmt.Fprintf(ts.Stdout(), "Set-Cookie: %s\n", c)
	}
	for _, c := range resp.Cookies() {
		if saveCookie != "" && c.Value != "" {
			ts.Check(os.WriteFile(saveCookie, []byte(c.Name+"="+c.Value+"\n"), 0o600))
		}
	}
	fmt.Fprintf(ts.Stdout(), "%s\n", body)
}

// webExec runs argv over the exec WebSocket and prints the HTTP status, the output and
// the exit code.
func webExec(ts *testscript.TestScript, client *http.Client, hdr http.Header, u string, argv []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: client, HTTPHeader: hdr})
	if err != nil {
		if resp != nil {
			fmt.Fprintf(ts.Stdout(), "HTTP %d\n", resp.StatusCode)
			body, _ := io.ReadAll(resp.Body)
			fmt.Fprintf(ts.Stdout(), "%s\n", body)
			return
		}
		fmt.Fprintf(ts.Stdout(), "error: %v\n", err)
		return
	}
	defer c.CloseNow()
	fmt.Fprintf(ts.Stdout(), "HTTP %d\n", resp.StatusCode)
	first, _ := json.Marshal(wire.ExecRequest{Argv: argv})
	ts.Check(c.Write(ctx, websocket.MessageText, first))
	ts.Check(c.Write(ctx, websocket.MessageText, []byte(`{"type":"eof"}`)))
	for {
		typ, msg, err := c.Read(ctx)
		if err != nil {
			ts.Fatalf("exec WebSocket: %v", err)
		}
		if typ == websocket.MessageBinary && len(msg) > 0 {
			ts.Stdout().Write(msg[1:])
			continue
		}
		var ctl wire.Control
		if json.Unmarshal(msg, &ctl) == nil && ctl.Type == "exit" {
			fmt.Fprintf(ts.Stdout(), "exit %d\n", ctl.Code)
			return
		}
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and localhost, and its key:
// selfsigned CERT KEY.
func selfSigned(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: selfsigned CERT KEY")
	}
	ts.Check(writeSelfSigned(ts.MkAbs(args[0]), ts.MkAbs(args[1])))
}

// writeSelfSigned writes a self-signed certificate (its own CA) for 127.0.0.1 and
// localhost to certPath, and its key to keyPath.
func writeSelfSigned(certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "paddock test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:    []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}
