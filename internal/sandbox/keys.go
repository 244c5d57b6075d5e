package sandbox

import "github.com/paddockhq/paddock/internal/api/wire"

// ProviderInfo is a model provider of the credential proxy, as GET /v1/providers shows
// it (wire.ProviderInfo; the daemon's keyring makes them).
type ProviderInfo = wire.ProviderInfo
