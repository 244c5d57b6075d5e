-- A session whose process ended while its sandbox ran (the user quit the agent) is not
-- resumed when the sandbox starts again; every other session is.
ALTER TABLE sessions ADD COLUMN ended INTEGER NOT NULL DEFAULT 0;
