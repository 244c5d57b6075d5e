package api

import (
	"github.com/paddockhq/paddock/internal/api/wire"
)

// The wire types of the routes wire.Client serves.
type (
	Version     = wire.Version
	ErrorBody   = wire.ErrorBody
	ExecRequest = wire.ExecRequest
	ExecIO      = wire.ExecIO
	Control     = wire.Control
)

// EventsQuery is wire.EventsQuery.
type EventsQuery = wire.EventsQuery
