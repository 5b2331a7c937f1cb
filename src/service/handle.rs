//! `Service`, the handle the HTTP layer holds: the served snapshot, derived data, prefetch jobs
//! and the catalog.

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::ParamValues;
use datafusion::logical_expr::LogicalPlan;

use super::derived::DerivedData;
use super::fits::Fits;
use super::leaderboard::Leaderboard;
use super::prefetch::Prefetch;
use super::reload::Reloader;
use super::snapshot::{Snapshot, Snapshots};
use super::sql::{Sql, SqlFailure, Surface};
use crate::engine::sql::{SqlAnswer, SqlError, SqlLimits};
use crate::store::catalog::Catalog;

/// Everything requests are answered from. Cheap to share (`Arc`).
pub struct Service {
    snapshots: Snapshots,
    /// Derived raw data of runs (ITLs, output lengths, timelines).
    pub derived: DerivedData,
    /// Prefetch jobs.
    pub prefetch: Prefetch,
    /// Fitted models over the dataset.
    pub fits: Fits,
    /// The catalog database (raw cache index, prefetch jobs).
    pub catalog: Catalog,
    /// The leaderboard's data files of the served snapshot.
    pub leaderboard: Leaderboard,
    /// Read-only SQL over the served snapshot, with its limits and gate.
    pub sql: Sql,
    /// Reading the dataset again (`POST /v1/admin/reload`, SIGHUP).
    pub reloader: Reloader,
    /// Other tools' measurements (`--import`) beside the dataset's runs.
    pub measurements: super::measurements::Measurements,
}

impl Service {
    pub fn new(snapshot: Snapshot, catalog: Catalog) -> Self {
        let derived = DerivedData::new(DerivedData::MEMORY_BYTES);
        let fits = Fits::new(64 << 20, derived.background().clone());
        Service {
            snapshots: Snapshots::new(snapshot),
            derived,
            prefetch: Prefetch::new(catalog.clone()),
            fits,
            catalog,
            leaderboard: Leaderboard::new(None, false),
            sql: Sql::new(SqlLimits::default(), Sql::default_concurrency(), Sql::QUEUE),
            reloader: Reloader::default(),
            measurements: Default::default(),
        }
    }

    /// The snapshot to answer one request from.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshots.current()
    }

    /// Replace the served snapshot; requests in flight finish on the one they started with.
    pub fn swap(&self, snapshot: Snapshot) -> Arc<Snapshot> {
        self.snapshots.swap(snapshot)
    }

    /// Read the dataset again from its source and serve it, or keep the served one if it fails
    /// (`reload`).
    pub async fn reload(&self) -> Result<Arc<Snapshot>, String> {
        let current = self.snapshot();
        let swapped = self
            .reloader
            .reload(current, false, |s| self.snapshots.swap(s))
            .await?;
        Ok(swapped.unwrap_or_else(|| self.snapshot()))
    }

    /// Run read-only SQL on `surface` over `snapshot` (through the gate, under the limits,
    /// counted), with a tighter time limit when the client asked for one: what every SQL front end
    /// (HTTP, the PostgreSQL wire, Flight SQL) calls.
    pub async fn sql(
        &self,
        surface: &Surface,
        snapshot: &Arc<Snapshot>,
        text: &str,
        params: ParamValues,
        timeout: Option<Duration>,
    ) -> Result<SqlAnswer, SqlFailure> {
        self.sql
            .run_on(surface, snapshot, &self.derived, text, params, timeout)
            .await
    }

    /// The logical plan of `text` on `surface` over `snapshot` (a prepared statement's schema).
    pub async fn sql_plan(
        &self,
        surface: &Surface,
        snapshot: &Arc<Snapshot>,
        text: &str,
    ) -> Result<LogicalPlan, SqlError> {
        self.sql.plan(surface, snapshot, &self.derived, text).await
    }

    /// The tables `surface` sees over `snapshot`, with their schemas.
    pub async fn sql_tables(
        &self,
        surface: &Surface,
        snapshot: &Arc<Snapshot>,
    ) -> Result<Vec<(String, SchemaRef)>, SqlError> {
        self.sql.tables(surface, snapshot, &self.derived).await
    }

    /// `reload`, but only when the source's content changed (`--watch`): `Ok(None)` when it is
    /// the one served.
    pub async fn reload_if_changed(&self) -> Result<Option<Arc<Snapshot>>, String> {
        let current = self.snapshot();
        self.reloader
            .reload(current, true, |s| self.snapshots.swap(s))
            .await
    }
}
