package sandbox

import "github.com/paddockhq/paddock/internal/api/wire"

// BackendReport is wire.BackendReport (the API's wire type; internal/doctor makes them).
type BackendReport = wire.BackendReport

// AgentReport is wire.AgentReport (the API's wire type; internal/doctor makes them).
type AgentReport = wire.AgentReport
