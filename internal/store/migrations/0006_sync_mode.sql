-- How a sandbox's work reaches the host repo: manual (paddock sync), on-commit or on-idle.
ALTER TABLE sandboxes ADD COLUMN sync_mode TEXT NOT NULL DEFAULT 'manual';
