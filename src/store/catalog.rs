//! The catalog database: which raw files the cache holds (size, checksum, last use) and the
//! prefetch jobs. sqlx's `Any` driver, so one code path serves an SQLite file (the default, next
//! to the cache) and `postgres://` (several replicas sharing one cache bucket). The schema is in
//! `migrations/`, embedded at compile time and applied at start.
//!
//! Queries use `$1, $2, ...` in ascending order, which both SQLite and PostgreSQL bind by position.

use std::borrow::Cow;

use futures::future::BoxFuture;
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};
use sqlx::{AnyPool, Row};

/// The migrations, embedded (version, description, SQL).
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "cache catalog",
        include_str!("../../migrations/0001_cache_catalog.sql"),
    ),
    (
        2,
        "job note",
        include_str!("../../migrations/0002_job_note.sql"),
    ),
    (
        3,
        "fetch leases",
        include_str!("../../migrations/0003_fetch_leases.sql"),
    ),
    (
        4,
        "hub commits",
        include_str!("../../migrations/0004_hub_commits.sql"),
    ),
];

#[derive(Debug)]
struct Embedded;

impl MigrationSource<'static> for Embedded {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, sqlx::error::BoxDynError>> {
        Box::pin(async {
            Ok(MIGRATIONS
                .iter()
                .map(|&(version, description, sql)| {
                    Migration::new(
                        version,
                        Cow::Borrowed(description),
                        MigrationType::Simple,
                        Cow::Borrowed(sql),
                        false,
                    )
                })
                .collect())
        })
    }
}

/// One cached file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub size: u64,
    pub sha256: Option<String>,
}

/// A prefetch job's row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct JobRow {
    pub id: String,
    pub domain: String,
    /// The run filters the job was started with (query string).
    pub query: String,
    /// `running`, `done` or `failed` (done, but some files could not be fetched).
    pub state: String,
    pub files_total: u64,
    pub files_done: u64,
    pub bytes_total: u64,
    pub bytes_done: u64,
    /// Files that could not be fetched: `{"run_id", "file", "error"}`.
    #[schema(value_type = Vec<Object>)]
    pub errors: serde_json::Value,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
    /// Why there is nothing to fetch, when there is not (a local dataset's raw files are read in
    /// place; no matched run has raw files).
    pub note: Option<String>,
}

/// Handle to the catalog database (a pool; cheap to clone).
#[derive(Clone, Debug)]
pub struct Catalog {
    pool: AnyPool,
    url: String,
    /// This process as a holder of fetch leases: random per `open`, so per replica.
    replica: std::sync::Arc<str>,
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn u(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn entry(r: &sqlx::any::AnyRow) -> Result<Entry, sqlx::Error> {
    Ok(Entry {
        key: r.try_get("key")?,
        size: u(r.try_get("size")?),
        sha256: r.try_get("sha256")?,
    })
}

impl Catalog {
    /// Open (creating an SQLite file if needed) and migrate. `url` is `sqlite://PATH` or
    /// `postgres://...`.
    pub async fn open(url: &str) -> Result<Catalog, sqlx::Error> {
        install_default_drivers();
        let connect = if url.starts_with("sqlite:") && !url.contains("mode=") {
            let sep = if url.contains('?') { '&' } else { '?' };
            format!("{url}{sep}mode=rwc")
        } else {
            url.to_string()
        };
        // SQLite allows one writer; a single connection serialises writes without busy errors.
        let max = if connect.starts_with("sqlite:") { 1 } else { 8 };
        let mut opts = AnyPoolOptions::new().max_connections(max);
        if connect.starts_with("sqlite:") {
            // Keep the one connection: an in-memory database lives only as long as it does.
            opts = opts
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None);
        }
        let pool = opts.connect(&connect).await?;
        Migrator::new(Embedded)
            .await
            .map_err(sqlx::Error::from)?
            .run(&pool)
            .await?;
        Ok(Catalog {
            pool,
            url: redact(url),
            replica: uuid::Uuid::new_v4().simple().to_string().into(),
        })
    }

    /// The database URL without credentials.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// This replica's id as a lease holder (random per process).
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Take the fetch lease on `key` for `ttl_ms` from now: whether this replica holds it now.
    /// Taken when nobody holds it, when its holder's lease has expired (a dead replica), or
    /// when this replica already holds it.
    pub async fn take_lease(&self, key: &str, ttl_ms: i64) -> Result<bool, sqlx::Error> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO fetch_leases (key, owner, expires_at_ms) VALUES ($1, $2, $3) \
             ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, \
             expires_at_ms = excluded.expires_at_ms \
             WHERE fetch_leases.expires_at_ms < $4 OR fetch_leases.owner = excluded.owner",
        )
        .bind(key)
        .bind(&*self.replica)
        .bind(now.saturating_add(ttl_ms))
        .bind(now)
        .execute(&self.pool)
        .await
        .map(|r| r.rows_affected() > 0)
    }

    /// Extend this replica's lease on `key` to `ttl_ms` from now: whether it still held it.
    pub async fn renew_lease(&self, key: &str, ttl_ms: i64) -> Result<bool, sqlx::Error> {
        sqlx::query("UPDATE fetch_leases SET expires_at_ms = $1 WHERE key = $2 AND owner = $3")
            .bind(now_ms().saturating_add(ttl_ms))
            .bind(key)
            .bind(&*self.replica)
            .execute(&self.pool)
            .await
            .map(|r| r.rows_affected() > 0)
    }

    /// Give up this replica's lease on `key` (another replica's is left alone).
    pub async fn release_lease(&self, key: &str) -> Result<(), sqlx::Error> {
        sqlx::query("DELETE FROM fetch_leases WHERE key = $1 AND owner = $2")
            .bind(key)
            .bind(&*self.replica)
            .execute(&self.pool)
            .await
            .map(|_| ())
    }

    /// A hub commit of `repo` read before: `Some(date)` (`None` inside when the hub gave none),
    /// or `None` when this catalog has not seen it.
    pub async fn hub_commit(
        &self,
        repo: &str,
        commit: &str,
    ) -> Result<Option<Option<String>>, sqlx::Error> {
        let row =
            sqlx::query("SELECT commit_date FROM hub_commits WHERE repo = $1 AND commit_sha = $2")
                .bind(repo)
                .bind(commit.to_ascii_lowercase())
                .fetch_optional(&self.pool)
                .await?;
        row.map(|r| {
            r.try_get::<String, _>("commit_date")
                .map(|d| Some(d).filter(|d| !d.is_empty()))
        })
        .transpose()
    }

    /// Record a hub commit of `repo` read, with its date.
    pub async fn record_hub_commit(
        &self,
        repo: &str,
        commit: &str,
        date: Option<&str>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO hub_commits (repo, commit_sha, commit_date) VALUES ($1, $2, $3) \
             ON CONFLICT (repo, commit_sha) DO UPDATE SET commit_date = excluded.commit_date",
        )
        .bind(repo)
        .bind(commit.to_ascii_lowercase())
        .bind(date.unwrap_or(""))
        .execute(&self.pool)
        .await
        .map(|_| ())
    }

    pub async fn lookup(&self, key: &str) -> Result<Option<Entry>, sqlx::Error> {
        let row = sqlx::query("SELECT key, size, sha256 FROM cache_entries WHERE key = $1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(entry).transpose()
    }

    /// Mark `key` used now; whether the catalog lists it.
    pub async fn touch(&self, key: &str) -> Result<bool, sqlx::Error> {
        sqlx::query("UPDATE cache_entries SET last_access_ms = $1 WHERE key = $2")
            .bind(now_ms())
            .bind(key)
            .execute(&self.pool)
            .await
            .map(|r| r.rows_affected() > 0)
    }

    /// Record a file just written to the cache (replacing any older row).
    pub async fn insert(&self, e: &Entry) -> Result<(), sqlx::Error> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM cache_entries WHERE key = $1")
            .bind(&e.key)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO cache_entries (key, size, sha256, fetched_at_ms, last_access_ms) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&e.key)
        .bind(i(e.size))
        .bind(e.sha256.clone())
        .bind(now)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await
    }

    pub async fn remove(&self, key: &str) -> Result<(), sqlx::Error> {
        sqlx::query("DELETE FROM cache_entries WHERE key = $1")
            .bind(key)
            .execute(&self.pool)
            .await
            .map(|_| ())
    }

    /// Number of entries and their total size.
    pub async fn totals(&self) -> Result<(u64, u64), sqlx::Error> {
        let r = sqlx::query(
            "SELECT COUNT(*) AS n, CAST(COALESCE(SUM(size), 0) AS BIGINT) AS bytes FROM cache_entries",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok((u(r.try_get("n")?), u(r.try_get("bytes")?)))
    }

    /// Entries from least to most recently used, leaving out `except`.
    pub async fn least_recent(&self, except: &str, limit: i64) -> Result<Vec<Entry>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT key, size, sha256 FROM cache_entries WHERE key <> $1 \
             ORDER BY last_access_ms, key LIMIT $2",
        )
        .bind(except)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(entry).collect()
    }

    pub async fn insert_job(&self, j: &JobRow) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO jobs (id, domain, query, state, files_total, files_done, bytes_total, \
             bytes_done, errors, created_at_ms, updated_at_ms, note) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(&j.id)
        .bind(&j.domain)
        .bind(&j.query)
        .bind(&j.state)
        .bind(i(j.files_total))
        .bind(i(j.files_done))
        .bind(i(j.bytes_total))
        .bind(i(j.bytes_done))
        .bind(j.errors.to_string())
        .bind(i(j.created_at_ms))
        .bind(i(j.updated_at_ms))
        .bind(j.note.clone())
        .execute(&self.pool)
        .await
        .map(|_| ())
    }

    pub async fn update_job(&self, j: &JobRow) -> Result<(), sqlx::Error> {
        sqlx::query(
            "UPDATE jobs SET state = $1, files_done = $2, bytes_done = $3, errors = $4, \
             updated_at_ms = $5 WHERE id = $6",
        )
        .bind(&j.state)
        .bind(i(j.files_done))
        .bind(i(j.bytes_done))
        .bind(j.errors.to_string())
        .bind(i(j.updated_at_ms))
        .bind(&j.id)
        .execute(&self.pool)
        .await
        .map(|_| ())
    }

    pub async fn job(&self, id: &str) -> Result<Option<JobRow>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT id, domain, query, state, files_total, files_done, bytes_total, bytes_done, \
             errors, created_at_ms, updated_at_ms, note FROM jobs WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            let errors: String = r.try_get("errors")?;
            Ok(JobRow {
                id: r.try_get("id")?,
                domain: r.try_get("domain")?,
                query: r.try_get("query")?,
                state: r.try_get("state")?,
                files_total: u(r.try_get("files_total")?),
                files_done: u(r.try_get("files_done")?),
                bytes_total: u(r.try_get("bytes_total")?),
                bytes_done: u(r.try_get("bytes_done")?),
                errors: serde_json::from_str(&errors).unwrap_or(serde_json::Value::Null),
                created_at_ms: u(r.try_get("created_at_ms")?),
                updated_at_ms: u(r.try_get("updated_at_ms")?),
                note: r.try_get("note")?,
            })
        })
        .transpose()
    }

    /// Jobs left `running` by a previous process can no longer progress: mark them failed.
    pub async fn fail_orphaned_jobs(&self) -> Result<u64, sqlx::Error> {
        sqlx::query("UPDATE jobs SET state = 'failed', updated_at_ms = $1 WHERE state = 'running'")
            .bind(now_ms())
            .execute(&self.pool)
            .await
            .map(|r| r.rows_affected())
    }
}

/// `scheme://user:password@host/...` → `scheme://user:***@host/...`.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &creds[..c], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            redact("postgres://me:secret@db:5432/x"),
            "postgres://me:***@db:5432/x"
        );
        assert_eq!(redact("sqlite:///tmp/c.db"), "sqlite:///tmp/c.db");
    }
}
