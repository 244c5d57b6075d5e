-- The head (last seq and hash) of each sandbox's flight record, kept apart from the
-- record's file so that entries cut off its end are found. Keyed by sandbox name: the
-- record outlives the sandbox.
CREATE TABLE record_heads (
	sandbox TEXT PRIMARY KEY,
	seq INTEGER NOT NULL,
	hash TEXT NOT NULL
);
