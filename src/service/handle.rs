//! `Service`, the handle every front end holds (HTTP, the PostgreSQL wire, Flight SQL): the served
//! snapshot, derived data, fits, prefetch jobs, the leaderboard, SQL and the catalog, behind
//! methods. Its parts are private: a front end asks the service, it does not wire the parts together.

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::ParamValues;
use datafusion::logical_expr::LogicalPlan;

use super::derived::{DerivedData, Evicted, PersistStats, evict_run};
use super::error::ServiceError;
use super::fits::Fits;
use super::leaderboard::{Leaderboard, Site, SiteFile};
use super::measurements::{Measurements, View};
use super::prefetch::Prefetch;
use super::reload::{ReloadOutcome, Reloader};
use super::snapshot::{Snapshot, Snapshots};
use super::sql::{Sql, SqlFailure, SqlStats, Surface};
use crate::engine::Domain;
use crate::engine::frame::Frame;
use crate::engine::sql::{SqlAnswer, SqlError, SqlLimits};
use crate::rawfile::RunDerived;
use crate::store::catalog::{Catalog, JobRow};

/// Everything requests are answered from. Cheap to share (`Arc`).
pub struct Service {
    snapshots: Snapshots,
    /// Other revisions of the dataset, loaded on first use and held beside the served one.
    revisions: super::revisions::Revisions,
    /// Derived raw data of runs (ITLs, output lengths, timelines).
    derived: DerivedData,
    /// Prefetch jobs.
    prefetch: Prefetch,
    /// Fitted models over the dataset.
    fits: Fits,
    /// The catalog database (raw cache index, prefetch jobs).
    catalog: Catalog,
    /// The leaderboard's data files of the served snapshot.
    pub(in crate::service) leaderboard: Leaderboard,
    /// Read-only SQL over the served snapshot, with its limits and gate.
    sql: Sql,
    /// Reading the dataset again (`POST /v1/admin/reload`, SIGHUP).
    reloader: Reloader,
    /// Other tools' measurements (`--import`) beside the dataset's runs.
    measurements: Measurements,
    /// The entity tags (SHA-256) of the local files the hub mirror has served.
    mirror_tags: super::mirror::Tags,
}

/// What a [`Service`] is built from besides its snapshot and catalog; the default is what
/// [`Service::new`] builds (the server's defaults, no reloader, no imported measurements).
pub struct ServiceOptions {
    /// The limits of every SQL query, the queries run at once, and those that may wait.
    pub sql_limits: SqlLimits,
    pub sql_concurrency: usize,
    pub sql_queue: usize,
    /// The runs a query of a raw-derived SQL table may read (`llm_itl`, ...).
    pub sql_max_raw_runs: usize,
    /// Prepared SQL statements kept per surface (0: every query planned anew).
    pub sql_plans: u64,
    /// What an SQL query's functions may build (one value, one call's output).
    pub sql_values: crate::engine::sql_bounds::ValueBounds,
    /// The leaderboard's `last_updated` (`None`: the snapshot's date).
    pub leaderboard_date: Option<String>,
    /// Whether the leaderboard reads raw files for its histograms from the start, rather than
    /// when a model file is first asked for.
    pub histograms_in_background: bool,
    /// Reading the dataset again (`POST /v1/admin/reload`, SIGHUP, `--watch`).
    pub reloader: Reloader,
    /// Other tools' measurements (`--import`).
    pub measurements: Measurements,
    /// Other revisions of the dataset (`revision`), and how many snapshots are held at once.
    pub revisions: super::revisions::Revisions,
}

impl Default for ServiceOptions {
    fn default() -> Self {
        ServiceOptions {
            sql_limits: SqlLimits::default(),
            sql_concurrency: Sql::default_concurrency(),
            sql_queue: Sql::QUEUE,
            sql_max_raw_runs: Sql::MAX_RAW_RUNS,
            sql_plans: Sql::PLANS,
            sql_values: Default::default(),
            leaderboard_date: None,
            histograms_in_background: false,
            reloader: Reloader::default(),
            measurements: Default::default(),
            revisions: Default::default(),
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
            revisions: options.revisions,
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
            )
            .with_max_raw_runs(options.sql_max_raw_runs)
            .with_plans(options.sql_plans)
            .with_values(options.sql_values),
            reloader: options.reloader,
            measurements: options.measurements,
            mirror_tags: Default::default(),
        }
    }

    /// The snapshot to answer one request from.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshots.current()
    }

    /// The snapshot `revision` names (none: the served one), loaded now if it is not held.
    pub async fn snapshot_at(&self, revision: Option<&str>) -> Result<Arc<Snapshot>, ServiceError> {
        Ok(self.snapshot_loaded(revision).await?.0)
    }

    /// `snapshot_at`, with how long its load took when this call loaded it.
    pub async fn snapshot_loaded(
        &self,
        revision: Option<&str>,
    ) -> Result<(Arc<Snapshot>, Option<Duration>), ServiceError> {
        let served = self.snapshot();
        match revision {
            None => Ok((served, None)),
            Some(revision) => self.revisions.at(served, revision).await,
        }
    }

    /// The other revisions held, and the last one loaded with its load time.
    pub fn revisions(&self) -> &super::revisions::Revisions {
        &self.revisions
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
        if swapped.is_some() {
            self.fit_predictors(self.snapshot());
        }
        Ok(swapped.unwrap_or_else(|| self.snapshot()))
    }

    /// Fit `snapshot`'s predictors off the request path (a request that needs one first fits it
    /// at once; it is one fit either way).
    fn fit_predictors(&self, snapshot: Arc<Snapshot>) {
        self.derived.background().spawn_blocking(move || {
            for domain in crate::engine::Domain::ALL {
                snapshot.predictor(domain);
            }
        });
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

    /// The functions `surface`'s queries may call, by kind, sorted.
    pub async fn sql_functions(
        &self,
        surface: &Surface,
        snapshot: &Arc<Snapshot>,
    ) -> Result<Vec<(&'static str, String)>, SqlError> {
        self.sql.functions(surface, snapshot, &self.derived).await
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
        let swapped = self
            .reloader
            .reload(current, true, |s| self.snapshots.swap(s))
            .await?;
        if swapped.is_some() {
            self.fit_predictors(self.snapshot());
        }
        Ok(swapped)
    }

    /// A run's derived raw data (ITLs, output lengths, timelines): from memory, the persisted
    /// copy, or its `results.json` (fetched into the raw cache first from a remote source).
    pub async fn derived(
        &self,
        snapshot: &Arc<Snapshot>,
        domain: Domain,
        row: usize,
    ) -> Result<Arc<RunDerived>, ServiceError> {
        self.derived.get(snapshot, domain, row).await
    }

    /// Evict a run's fetched raw files and persisted derived data from the cache.
    pub async fn evict(
        &self,
        snapshot: &Snapshot,
        domain: Domain,
        row: usize,
    ) -> Result<Evicted, ServiceError> {
        evict_run(&self.derived, snapshot, domain, row).await
    }

    /// Work still running after its request (persisting derived data and fits): `close` and
    /// `wait` on it before exiting.
    pub fn background(&self) -> &tokio_util::task::TaskTracker {
        self.derived.background()
    }

    /// What persisting derived data has done since start.
    pub fn persist_stats(&self) -> PersistStats {
        self.derived.persist_stats()
    }

    /// The fit `request` describes over `snapshot`: from memory, the persisted copy, or made by
    /// `fit` (and persisted off the request path).
    pub async fn fit<F>(
        &self,
        snapshot: &Arc<Snapshot>,
        request: &str,
        fit: F,
    ) -> Result<Arc<Frame>, ServiceError>
    where
        F: Future<Output = Result<Frame, ServiceError>>,
    {
        self.fits.get_or_fit(snapshot, request, fit).await
    }

    /// Start a job fetching the raw files of `rows` of `domain` into the raw cache.
    pub async fn prefetch(
        &self,
        snapshot: &Snapshot,
        domain: Domain,
        rows: &[usize],
        query: String,
    ) -> Result<JobRow, sqlx::Error> {
        self.prefetch.start(snapshot, domain, rows, query).await
    }

    /// A prefetch job's progress (`None`: no such job).
    pub async fn job(&self, id: &str) -> Result<Option<JobRow>, sqlx::Error> {
        self.prefetch.job(id).await
    }

    /// The leaderboard's site of `snapshot` (its file list; files made on request).
    pub fn leaderboard_site(&self, snapshot: &Snapshot) -> Arc<Site> {
        self.leaderboard.site(snapshot)
    }

    /// The file at `path` of `site`, made now from raw files if it needs them; `None` for a file
    /// the leaderboard does not have.
    pub async fn leaderboard_file(
        &self,
        site: &Arc<Site>,
        snapshot: &Arc<Snapshot>,
        path: &str,
    ) -> Result<Option<Arc<SiteFile>>, ServiceError> {
        site.file(snapshot, &self.derived, path).await
    }

    /// The leaderboard's configured `last_updated` (`None`: the snapshot's date).
    pub fn leaderboard_date(&self) -> Option<&str> {
        self.leaderboard.configured_date()
    }

    /// For a server about to answer: the predictors are fitted and the leaderboard's site is made
    /// and compressed off the request path, and its files that need raw reads are made now when so
    /// configured; `stop` ends that.
    pub fn start_background(self: &Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        Leaderboard::prepare(self);
        self.fit_predictors(self.snapshot());
        let service = self.clone();
        tokio::spawn(async move {
            service
                .leaderboard
                .warm(service.snapshot(), &service.derived, stop)
                .await
        });
    }

    /// Other tools' measurements (`--import`) beside `snapshot`'s runs.
    pub fn measurements(&self, snapshot: &Snapshot) -> Arc<View> {
        self.measurements.view(snapshot)
    }

    /// The last reload's outcome, if any.
    pub fn last_reload(&self) -> Option<ReloadOutcome> {
        self.reloader.last()
    }

    /// The raw cache's files and bytes, from the catalog.
    pub async fn cache_totals(&self) -> Result<(u64, u64), sqlx::Error> {
        self.catalog.totals().await
    }

    /// The catalog's URL (its password left out) and this replica's name in it.
    pub fn catalog_names(&self) -> (&str, &str) {
        (self.catalog.url(), self.catalog.replica())
    }

    /// SQL's counters since start.
    pub fn sql_stats(&self) -> SqlStats {
        self.sql.stats()
    }

    /// The runs a query of a raw-derived SQL table may read.
    pub fn sql_max_raw_runs(&self) -> usize {
        self.sql.max_raw_runs
    }

    /// A file of `snapshot`'s source as the hub mirror serves it (`path` relative to its root).
    pub async fn mirror_file(
        &self,
        snapshot: &Snapshot,
        path: &str,
    ) -> Result<super::mirror::MirrorFile, super::mirror::MirrorError> {
        super::mirror::open_file(snapshot, &self.mirror_tags, path).await
    }

    /// The files of `snapshot`'s source under `prefix`, with their sizes (the mirror's listings).
    pub async fn mirror_list(
        &self,
        snapshot: &Snapshot,
        prefix: &str,
    ) -> Result<Vec<super::mirror::Listed>, super::mirror::MirrorError> {
        super::mirror::list_files(snapshot, prefix).await
    }
}
