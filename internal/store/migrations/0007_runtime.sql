-- The OCI runtime a sandbox runs under (runsc for gVisor); empty is the backend's default.
ALTER TABLE sandboxes ADD COLUMN runtime TEXT NOT NULL DEFAULT '';
