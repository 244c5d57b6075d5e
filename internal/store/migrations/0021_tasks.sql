-- Tasks (internal/task): a prompt tried by several agents, each attempt in its own
-- sandbox. A task is kept whole as one JSON document (wire.Task), written in one
-- statement, so a crash leaves the one before or the one after.
CREATE TABLE tasks (
	name TEXT PRIMARY KEY,
	doc TEXT NOT NULL,
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL
);
-- The merge queue: one entry per landing or pull request, in order of id within its
-- repository and branch. doc is the whole wire.QueueEntry; state is repeated for the
-- look-up of open entries.
CREATE TABLE land_queue (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	task TEXT NOT NULL,
	repo TEXT NOT NULL,
	into_branch TEXT NOT NULL,
	state TEXT NOT NULL,
	doc TEXT NOT NULL
);
CREATE INDEX land_queue_repo ON land_queue (repo, into_branch, state);
