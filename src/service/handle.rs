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

/// What a [`Service`] is built from besides its snapshot and catalog; the default is what
/// [`Service::new`] builds (the server's defaults, no reloader, no imported measurements).
pub struct ServiceOptions {
    /// The limits of every SQL query, the queries run at once, and those that may wait.
    pub sql_limits: SqlLimits,
    pub sql_concurrency: usize,
    pub sql_queue: usize,
    /// The leaderboard's `last_updated` (`None`: the snapshot's date).
    pub leaderboard_date: Option<String>,
    /// Whether the leaderboard reads raw files for its histograms from the start, rather than
    /// when a model file is first asked for.
    pub histograms_in_background: bool,
    /// Reading the dataset again (`POST /v1/admin/reload`, SIGHUP, `--watch`).
    pub reloader: Reloader,
    /// Other tools' measurements (`--import`).
    pub measurements: super::measurements::Measurements,
}

impl Default for ServiceOptions {
    fn default() -> Self {
        ServiceOptions {
            sql_limits: SqlLimits::default(),
            sql_concurrency: Sql::default_concurrency(),
            sql_queue: Sql::QUEUE,
            leaderboard_date: None,
            histograms_in_background: false,
            reloader: Reloader::default(),
            measurements: Default::default(),
        }
    }
}

impl Service {
    /// A service with the default options.
    pub fn new(snapshot: Snapshot, catalog: Catalog) -> Self {
        Self::with_options(snapshot, catalog, ServiceOptions::default())
    }

    /// A service built from `options`, once.
    pub fn with_options(snapshot: Snapshot, catalog: Catalog, options: ServiceOptions) -> Self {
        let derived = DerivedData::new(DerivedData::MEMORY_BYTES);
        let fits = Fits::new(64 << 20, derived.background().clone());
        Service {
            snapshots: Snapshots::new(snapshot),
            derived,
            prefetch: Prefetch::new(catalog.clone()),
            fits,
            catalog,
            leaderboard: Leaderboard::new(
                options.leaderboard_date,
                options.histograms_in_background,
            ),
            sql: Sql::new(
                options.sql_limits,
                options.sql_concurrency,
                options.sql_queue,
            ),
            reloader: options.reloader,
            measurements: options.measurements,
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
