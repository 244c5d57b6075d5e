-- Sessions: one agent conversation in its own tmux session inside a sandbox.
CREATE TABLE sessions (
    sandbox_id TEXT NOT NULL,
    name       TEXT NOT NULL,
    agent      TEXT NOT NULL,            -- adapter name: claude, codex, shell...
    resume_id  TEXT NOT NULL DEFAULT '', -- the agent's own conversation id
    command    TEXT NOT NULL DEFAULT '', -- for the shell adapter: the command line
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (sandbox_id, name)
);
