-- Sandboxes: one row per sandbox the daemon manages.
CREATE TABLE sandboxes (
    id          TEXT PRIMARY KEY,          -- backend ID, short and random
    name        TEXT NOT NULL UNIQUE,      -- user-facing, git-branch-like
    backend     TEXT NOT NULL,
    state       TEXT NOT NULL,             -- desired/last known: created, running, stopped, error
    source_path TEXT NOT NULL DEFAULT '',  -- host repo the workspace was cloned from
    source_url  TEXT NOT NULL DEFAULT '',  -- git URL given to `up`, if any
    base_commit TEXT NOT NULL DEFAULT '',  -- the commit /workspace started from
    rootfs      TEXT NOT NULL DEFAULT '',
    detail      TEXT NOT NULL DEFAULT '',  -- why it is in error
    created_at  INTEGER NOT NULL,          -- unix nanoseconds
    updated_at  INTEGER NOT NULL
);
