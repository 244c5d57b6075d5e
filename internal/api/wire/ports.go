package wire

// PortInfo is a port of GET /v1/sandboxes/{name}/ports.
type PortInfo struct {
	Port    int    `json:"port"`
	Address string `json:"address"`
	Process string `json:"process,omitempty"`
	PID     string `json:"pid,omitempty"`
	// URL is the port's own origin (http://PORT-SANDBOX.localhost:WEBPORT/), for browsers
	// on the daemon's machine; empty when paddock web serves nothing or the name cannot
	// be a host name. Opening it needs a code: POST .../ports/{port}/open.
	URL string `json:"url,omitempty"`
	// PathURL is the path form under the web UI's address, wherever the UI is reached.
	PathURL string `json:"path_url,omitempty"`
}

// OpenPort is the answer of POST /v1/sandboxes/{name}/ports/{port}/open.
type OpenPort struct {
	// URL opens the preview once, signing that browser in to it.
	URL string `json:"url"`
}
