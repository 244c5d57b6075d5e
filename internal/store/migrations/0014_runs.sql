-- Runs of the host-side agent (`paddock run`): one conversation each, kept after its
-- sandbox is gone, for audit.
CREATE TABLE runs (
    id                 TEXT PRIMARY KEY,
    sandbox_id         TEXT NOT NULL,
    sandbox            TEXT NOT NULL,
    provider           TEXT NOT NULL,
    model              TEXT NOT NULL,
    title              TEXT NOT NULL,              -- the first prompt, cut short
    status             TEXT NOT NULL,              -- running, done, failed, cancelled, stopped, interrupted
    error              TEXT NOT NULL DEFAULT '',
    created            INTEGER NOT NULL,
    updated            INTEGER NOT NULL,
    turns              INTEGER NOT NULL DEFAULT 0,
    tool_calls         INTEGER NOT NULL DEFAULT 0,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    conversation       TEXT NOT NULL DEFAULT '[]'  -- JSON: the messages, to resume
);
CREATE INDEX runs_sandbox ON runs (sandbox, created);

-- Each step of a run: a prompt, a model turn, a tool call (its whole output).
CREATE TABLE run_steps (
    run_id             TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq                INTEGER NOT NULL,
    kind               TEXT NOT NULL,              -- prompt, turn, tool
    name               TEXT NOT NULL DEFAULT '',   -- the tool
    input              TEXT NOT NULL DEFAULT '',
    output             TEXT NOT NULL DEFAULT '',
    is_error           INTEGER NOT NULL DEFAULT 0,
    started            INTEGER NOT NULL,
    duration           INTEGER NOT NULL DEFAULT 0, -- nanoseconds
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, seq)
);
