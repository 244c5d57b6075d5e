-- The image a sandbox runs (docker: --image, a devcontainer's, or one built for it); empty
-- is the backend's default.
ALTER TABLE sandboxes ADD COLUMN image TEXT NOT NULL DEFAULT '';
