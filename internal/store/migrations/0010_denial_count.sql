-- Identical denials (same sandbox, host and port) within a minute are one row with a
-- count and the time of the last; each sandbox keeps its newest 1,000 rows.
ALTER TABLE net_denials ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
ALTER TABLE net_denials ADD COLUMN last_seen INTEGER NOT NULL DEFAULT 0;
UPDATE net_denials SET last_seen = time;
CREATE INDEX net_denials_dest ON net_denials (sandbox_id, host, port, id);
DELETE FROM net_denials WHERE id IN (
    SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY sandbox_id ORDER BY id DESC) AS n FROM net_denials)
    WHERE n > 1000
);
