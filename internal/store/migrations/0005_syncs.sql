-- Syncs: what each `paddock sync` fetched from a sandbox. Sessions may work in a worktree.
CREATE TABLE syncs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    sandbox_id TEXT NOT NULL,
    time       INTEGER NOT NULL,
    result     TEXT NOT NULL   -- JSON: the refs updated, their commits and files
);
CREATE INDEX syncs_sandbox ON syncs (sandbox_id, id);
ALTER TABLE sessions ADD COLUMN dir TEXT NOT NULL DEFAULT '';
