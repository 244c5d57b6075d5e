-- Metering at the credential proxy: one row per model request a sandbox made, with the
-- usage its answer reported. Rows outlive their sandbox (what it cost stays known); the
-- session is paddock's session name when the request said which one it came from, and
-- agent_session the agent's own conversation id when it sent one (resolved against
-- sessions.resume_id when read, for agents whose id paddock learns later).
CREATE TABLE usage (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    time               INTEGER NOT NULL,            -- unix nanoseconds, when the request came
    sandbox_id         TEXT NOT NULL,
    sandbox            TEXT NOT NULL,
    session            TEXT NOT NULL DEFAULT '',
    agent_session      TEXT NOT NULL DEFAULT '',
    provider           TEXT NOT NULL,
    model              TEXT NOT NULL DEFAULT '',
    status             INTEGER NOT NULL DEFAULT 0,  -- the answer's HTTP status
    input_tokens       INTEGER NOT NULL DEFAULT 0,  -- not read from the cache
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd           REAL NOT NULL DEFAULT 0,     -- an estimate, from the prices when recorded
    priced             INTEGER NOT NULL DEFAULT 1,  -- 0: no price known for the model
    duration           INTEGER NOT NULL DEFAULT 0   -- nanoseconds, to the answer's end
);
CREATE INDEX usage_sandbox ON usage (sandbox_id, session);
CREATE INDEX usage_name_time ON usage (sandbox, time);
CREATE INDEX usage_time ON usage (time);

-- Budgets: what a sandbox (session '') or one of its sessions may spend, in estimated
-- US dollars and/or tokens (0: no bound of that kind). Removed with the sandbox.
CREATE TABLE budgets (
    sandbox_id TEXT NOT NULL,
    session    TEXT NOT NULL DEFAULT '',
    usd        REAL NOT NULL DEFAULT 0,
    tokens     INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (sandbox_id, session)
);
