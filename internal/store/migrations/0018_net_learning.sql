-- Egress learn mode: a sandbox learning until a time, and the destinations it reached
-- for meanwhile (at most 1,000 per sandbox), allowed or refused, with counts.
CREATE TABLE net_learning (
    sandbox_id TEXT PRIMARY KEY,
    started_at INTEGER NOT NULL,
    until      INTEGER NOT NULL,
    dropped    INTEGER NOT NULL DEFAULT 0 -- requests to destinations past the 1,000 kept
);

CREATE TABLE net_learned (
    sandbox_id TEXT NOT NULL,
    host       TEXT NOT NULL,
    port       INTEGER NOT NULL,
    first_seen INTEGER NOT NULL,
    last_seen  INTEGER NOT NULL,
    count      INTEGER NOT NULL,   -- requests
    refused    INTEGER NOT NULL,   -- of which the proxy refused
    reason     TEXT NOT NULL,      -- why the last refused one was
    methods    TEXT NOT NULL,      -- the methods seen, comma-separated
    paths      TEXT NOT NULL,      -- the first paths of plain HTTP requests, newline-separated
    PRIMARY KEY (sandbox_id, host, port)
);
