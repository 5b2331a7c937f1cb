-- The raw cache's index: one row per file held in the cache store (portable SQL: SQLite and PostgreSQL).
CREATE TABLE IF NOT EXISTS cache_entries (
    -- Object key in the cache store: "<source namespace>/<path in the source>".
    key TEXT PRIMARY KEY,
    size BIGINT NOT NULL,
    -- Hex SHA-256 of the content when the source published one (hub LFS files), else NULL.
    sha256 TEXT,
    fetched_at_ms BIGINT NOT NULL,
    last_access_ms BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS cache_entries_by_access ON cache_entries (last_access_ms, key);

-- Background prefetch jobs (POST /v1/{domain}/prefetch, GET /v1/jobs/{id}).
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    domain TEXT NOT NULL,
    query TEXT NOT NULL,
    state TEXT NOT NULL,
    files_total BIGINT NOT NULL,
    files_done BIGINT NOT NULL,
    bytes_total BIGINT NOT NULL,
    bytes_done BIGINT NOT NULL,
    -- JSON array of {"run_id", "file", "error"}.
    errors TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL
);
