-- Events: what happened to each sandbox, for `paddock events` and the audit trail.
CREATE TABLE events (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    sandbox_id TEXT NOT NULL,
    time       INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    message    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_sandbox ON events (sandbox_id, seq);
