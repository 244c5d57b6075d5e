package client

import (
	"context"
	"net/http"
	"strconv"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// Ports lists the ports processes inside a sandbox listen on, with their preview URLs.
func (c *Client) Ports(ctx context.Context, name string) ([]wire.PortInfo, error) {
	var out []wire.PortInfo
	err := c.Do(ctx, http.MethodGet, sandboxPath(name)+"/ports", nil, &out)
	return out, err
}

// OpenPort makes a link that opens a port's preview; pathForm asks for the
// /preview/SANDBOX/PORT/ form instead of the port's own origin.
func (c *Client) OpenPort(ctx context.Context, name string, port int, pathForm bool) (wire.OpenPort, error) {
	q := ""
	if pathForm {
		q = "?form=path"
	}
	var out wire.OpenPort
	err := c.Do(ctx, http.MethodPost, sandboxPath(name)+"/ports/"+strconv.Itoa(port)+"/open"+q, nil, &out)
	return out, err
}
