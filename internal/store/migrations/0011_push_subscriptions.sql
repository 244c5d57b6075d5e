-- Web Push subscriptions: each browser that asked to be notified (the web UI's "Notify me").
-- The endpoint is the push service's URL for that browser; p256dh and auth are the keys its
-- messages are encrypted to (RFC 8291). A push service that answers 404 or 410 has
-- forgotten the subscription, and the daemon deletes it.
CREATE TABLE push_subscriptions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint   TEXT NOT NULL UNIQUE,
    p256dh     TEXT NOT NULL,
    auth       TEXT NOT NULL,
    label      TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    last_sent  INTEGER NOT NULL DEFAULT 0
);
