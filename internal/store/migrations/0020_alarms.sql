-- Alarms: an agent went for its own controls (internal/alarm). One stands until the user
-- clears it; cleared ones are kept, with when.
CREATE TABLE alarms (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	sandbox_id TEXT NOT NULL,
	sandbox TEXT NOT NULL,
	session TEXT NOT NULL DEFAULT '',
	time INTEGER NOT NULL,
	kind TEXT NOT NULL,
	source TEXT NOT NULL,
	detail TEXT NOT NULL,
	cleared INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX alarms_sandbox ON alarms (sandbox_id, cleared);
