package client

import (
	"net/url"
	"strconv"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// eventsPath is the path and query of GET /v1/events for q.
func eventsPath(q wire.EventsQuery) string {
	v := url.Values{}
	if q.Sandbox != "" {
		v.Set("sandbox", q.Sandbox)
	}
	if q.Since != "" {
		v.Set("since", q.Since)
	}
	if q.Until != "" {
		v.Set("until", q.Until)
	}
	if q.NoFollow {
		v.Set("follow", "false")
	}
	if q.Last > 0 && q.Since == "" {
		v.Set("last", strconv.Itoa(q.Last))
	}
	if len(v) == 0 {
		return "/v1/events"
	}
	return "/v1/events?" + v.Encode()
}
