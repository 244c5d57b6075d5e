package wire

import "time"

// WebRequest is the body of PUT /v1/web. The TLS files are absolute paths on the host;
// both or neither.
type WebRequest struct {
	Listen  string `json:"listen"`
	TLSCert string `json:"tls_cert,omitempty"`
	TLSKey  string `json:"tls_key,omitempty"`
}

// WebStatus is what GET /v1/web reports.
type WebStatus struct {
	Serving bool `json:"serving"`
	// Listen is the bound address (its real port when asked for port 0).
	Listen string `json:"listen,omitempty"`
	// URL is where a browser reaches the API: https when TLS is on.
	URL string `json:"url,omitempty"`
	TLS bool   `json:"tls"`
	// Loopback says only this machine can connect.
	Loopback bool `json:"loopback"`
	// Error says why the remembered listener could not be served again when the daemon
	// started.
	Error string `json:"error,omitempty"`
	// LoginURL signs one browser in, once, until LoginExpires. Only answers that made a
	// login code have it.
	LoginURL     string     `json:"login_url,omitempty"`
	LoginExpires *time.Time `json:"login_expires,omitempty"`
}
