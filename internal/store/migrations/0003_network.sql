-- Network: each sandbox's network mode and the in-sandbox ports of its proxies, the
-- egress rules (global and per sandbox), and every refused egress request.
ALTER TABLE sandboxes ADD COLUMN network TEXT NOT NULL DEFAULT 'closed'; -- closed | open
ALTER TABLE sandboxes ADD COLUMN creds_port INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sandboxes ADD COLUMN egress_port INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sandboxes ADD COLUMN creds_token TEXT NOT NULL DEFAULT ''; -- the placeholder key the sandbox presents
ALTER TABLE sandboxes ADD COLUMN agents TEXT NOT NULL DEFAULT '';     -- comma-separated agent kinds, for default allowlists

CREATE TABLE net_rules (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    scope      TEXT NOT NULL,   -- 'global' or a sandbox ID
    pattern    TEXT NOT NULL,
    action     TEXT NOT NULL,   -- allow | deny
    created_at INTEGER NOT NULL,
    UNIQUE (scope, pattern)
);

CREATE TABLE net_denials (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    time       INTEGER NOT NULL,
    sandbox_id TEXT NOT NULL,
    host       TEXT NOT NULL,
    port       INTEGER NOT NULL,
    reason     TEXT NOT NULL
);
CREATE INDEX net_denials_sandbox ON net_denials (sandbox_id, id);
