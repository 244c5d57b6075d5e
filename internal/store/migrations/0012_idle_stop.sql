-- A sandbox's own idle stop: stopped after this many seconds unused (0: the config's).
ALTER TABLE sandboxes ADD COLUMN idle_stop_seconds INTEGER NOT NULL DEFAULT 0;
