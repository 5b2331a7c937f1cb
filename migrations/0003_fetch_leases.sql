-- Single flight across replicas: the replica that fetches a raw file into a shared cache holds a
-- lease on its key, renewed while the download runs and deleted when the file is listed (or the
-- download failed). Another replica that wants the same file waits for the listing or for the
-- lease to go; a dead replica's lease is taken over once it has expired.
CREATE TABLE IF NOT EXISTS fetch_leases (
    key TEXT PRIMARY KEY,
    -- The holder: a replica id, random per process.
    owner TEXT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);
