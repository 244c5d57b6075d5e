-- Events for `paddock events` and GET /v1/events: each carries its sandbox's name (events
-- outlive their sandbox, so its removal stays in the history), the session it concerns,
-- and its attributes as a JSON object.
ALTER TABLE events ADD COLUMN sandbox TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN session TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN attrs TEXT NOT NULL DEFAULT '';
UPDATE events SET sandbox = COALESCE((SELECT name FROM sandboxes WHERE sandboxes.id = events.sandbox_id), '');
CREATE INDEX events_name ON events (sandbox, seq);
CREATE INDEX events_time ON events (time);
