-- A team on one server: people signed in with GitHub, the sandboxes each owns, and an
-- audit log of who did what. Owner and user 0 is the daemon's host (the unix socket, the
-- tokens `paddock token create` makes): its sandboxes are the admins'.
CREATE TABLE users (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    github_id          INTEGER NOT NULL UNIQUE,
    login              TEXT NOT NULL,
    name               TEXT NOT NULL DEFAULT '',
    admin              INTEGER NOT NULL DEFAULT 0,
    -- github_token is the user's GitHub OAuth token, kept to check their membership
    -- again; empty once membership is revoked.
    github_token       TEXT NOT NULL DEFAULT '',
    created_at         INTEGER NOT NULL,
    last_seen          INTEGER NOT NULL DEFAULT 0,
    -- checked_at is the last time GitHub said the user is a member; revoked_at is set
    -- when it said they no longer are.
    checked_at         INTEGER NOT NULL DEFAULT 0,
    revoked_at         INTEGER NOT NULL DEFAULT 0
);

ALTER TABLE api_tokens ADD COLUMN user_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE web_sessions ADD COLUMN user_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sandboxes ADD COLUMN owner_id INTEGER NOT NULL DEFAULT 0;

CREATE TABLE audit (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    time     INTEGER NOT NULL,
    who      TEXT NOT NULL,            -- a GitHub login, "token NAME", "browser" or "local"
    user_id  INTEGER NOT NULL DEFAULT 0,
    action   TEXT NOT NULL,            -- e.g. "POST /v1/sandboxes/{name}/start", "sign-in"
    sandbox  TEXT NOT NULL DEFAULT '',
    status   INTEGER NOT NULL DEFAULT 0, -- the HTTP status answered
    detail   TEXT NOT NULL DEFAULT '',
    remote   TEXT NOT NULL DEFAULT ''  -- the client's address; "unix" for the socket
);
CREATE INDEX audit_time ON audit (time);
