-- Checkpoints (internal/checkpoint): a sandbox's workspace and one session's conversation
-- at the end of a turn. The files are a commit in the sandbox's own repository; this is
-- the record of it, doc the whole wire.Checkpoint. seq numbers a sandbox's checkpoints.
CREATE TABLE checkpoints (
	sandbox_id TEXT NOT NULL,
	seq INTEGER NOT NULL,
	session TEXT NOT NULL,
	name TEXT NOT NULL,
	doc TEXT NOT NULL,
	PRIMARY KEY (sandbox_id, seq)
);
