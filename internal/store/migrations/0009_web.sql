-- The API over TCP (paddock web). Tokens and browser sessions are kept only as SHA-256
-- hashes of their secrets: the database never holds anything that authenticates.
CREATE TABLE api_tokens (
    name       TEXT PRIMARY KEY,
    hash       BLOB NOT NULL UNIQUE,
    read_only  INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    last_used  INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE web_sessions (
    hash       BLOB PRIMARY KEY,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);

-- Where the daemon serves the API over TCP, so that a restarted daemon serves it again.
CREATE TABLE web_listener (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    listen   TEXT NOT NULL,
    tls_cert TEXT NOT NULL DEFAULT '',
    tls_key  TEXT NOT NULL DEFAULT ''
);
