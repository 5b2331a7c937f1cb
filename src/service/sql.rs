//! SQL for every surface (`engine::sql` does the planning and the limits): one SQL context per
//! served snapshot (its tables and memory pool, made on first use, confined to the functions
//! `engine::sql_bounds` allows), and a gate on concurrency: at most `concurrency` queries run at
//! once, at most `queue` more wait (each for no longer than the time limit), and a query beyond
//! those is told the service is busy.
//!
//! Queries run on a runtime of their own (`concurrency` threads): one call that computes for long
//! without yielding holds one of those threads, never one that answers HTTP, and its caller
//! answers at the time limit (plus [`Sql::GRACE`]) whatever the query is doing. The query's turn
//! at the gate is held until its work has really stopped, so such a query still counts against
//! `concurrency`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use datafusion::common::ParamValues;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use std::sync::Arc;

use super::derived::DerivedData;
pub use super::error::SqlFailure;
use super::snapshot::Snapshot;
use super::sql_tables::{MAX_RAW_RUNS, RawTable, RawTableKind};
use crate::engine::sql::{self, SqlAnswer, SqlError, SqlLimits};
use crate::engine::sql_bounds::{self, ValueBounds};
use crate::engine::sql_prepared::{self, Prepared, PreparedError};

/// Counts of the queries asked and of those not answered, by why, and of the prepared
/// statements' use.
#[derive(Debug, Clone, Copy, Default)]
pub struct SqlStats {
    pub queries: u64,
    /// Queries whose statement was planned before (the plan bound with their values).
    pub plan_hits: u64,
    /// Queries whose statement was planned for them (and kept).
    pub plan_misses: u64,
    /// Prepared statements dropped to keep the cache in its bound.
    pub plan_evictions: u64,
    pub refused: u64,
    pub invalid: u64,
    pub timeouts: u64,
    pub memory: u64,
    pub rows: u64,
    pub busy: u64,
}

#[derive(Debug, Default)]
struct Counts {
    queries: std::sync::atomic::AtomicU64,
    plan_hits: std::sync::atomic::AtomicU64,
    plan_misses: std::sync::atomic::AtomicU64,
    plan_evictions: Arc<std::sync::atomic::AtomicU64>,
    refused: std::sync::atomic::AtomicU64,
    invalid: std::sync::atomic::AtomicU64,
    timeouts: std::sync::atomic::AtomicU64,
    memory: std::sync::atomic::AtomicU64,
    rows: std::sync::atomic::AtomicU64,
    busy: std::sync::atomic::AtomicU64,
}

/// A surface's additions to the tables every surface sees (the PostgreSQL wire protocol adds
/// `pg_catalog` and its functions, which its clients query when they connect). Each surface has
/// a context of its own per snapshot, made on first use.
#[derive(Clone, Copy)]
pub struct Surface {
    pub name: &'static str,
    pub setup: fn(&SessionContext) -> Result<(), String>,
}

impl Surface {
    /// The tables and DataFusion's functions, nothing more (HTTP, Flight SQL).
    pub const PLAIN: Surface = Surface {
        name: "plain",
        setup: |_| Ok(()),
    };
}

pub struct Sql {
    pub limits: SqlLimits,
    /// What a query's functions may build.
    pub values: ValueBounds,
    /// Runs one query may read the raw data of (the raw-derived tables).
    pub max_raw_runs: usize,
    /// Prepared statements kept per surface and snapshot (0: none, every query planned anew).
    plans: u64,
    concurrency: usize,
    queue: usize,
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    /// The runtime queries run on (taken when the service is dropped).
    runtime: Option<tokio::runtime::Runtime>,
    /// Each surface's context and prepared statements, with the snapshot generation they were
    /// made for (a new snapshot drops both).
    contexts: Mutex<Vec<(&'static str, u64, SessionContext, Plans)>>,
    counts: Arc<Counts>,
}

impl Drop for Sql {
    fn drop(&mut self) {
        // Without waiting for a query still computing (a service may be dropped on a runtime).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A statement's plan as kept: prepared, or not preparable (it is run as written).
enum Plan {
    Ready(Prepared),
    AsWritten,
}

/// One context's prepared statements by their lifted text (`engine::sql_prepared`), at most
/// `PLANS` of them (least recently used dropped first), and the session states they are given
/// physical plans with (made once per context).
#[derive(Clone)]
struct Plans {
    kept: moka::sync::Cache<String, Arc<Plan>>,
    states: Arc<sql_prepared::PlanStates>,
}

impl Sql {
    /// Prepared statements kept per surface and snapshot unless configured otherwise.
    pub const PLANS: u64 = 1024;

    /// Queries waiting for a turn unless configured otherwise.
    pub const QUEUE: usize = 16;

    /// Runs one query of a raw-derived table may read unless configured otherwise.
    pub const MAX_RAW_RUNS: usize = MAX_RAW_RUNS;

    /// How long past its time limit a query's caller waits for it to stop of itself (it stops
    /// at the limit when it yields; one busy in a long call is answered at the limit plus this).
    pub const GRACE: Duration = Duration::from_millis(250);

    /// Queries running at once unless configured otherwise: one per core.
    pub fn default_concurrency() -> usize {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    }

    pub fn new(limits: SqlLimits, concurrency: usize, queue: usize) -> Sql {
        let concurrency = concurrency.max(1);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(concurrency)
            .thread_name("sql")
            .thread_stack_size(sql::WORKER_STACK_BYTES)
            .enable_all()
            .build()
            .expect("the SQL runtime's threads start");
        Sql {
            limits,
            values: ValueBounds::default(),
            max_raw_runs: MAX_RAW_RUNS,
            plans: Self::PLANS,
            concurrency,
            queue,
            permits: Arc::new(Semaphore::new(concurrency)),
            waiting: AtomicUsize::new(0),
            runtime: Some(runtime),
            contexts: Mutex::new(Vec::new()),
            counts: Arc::default(),
        }
    }

    /// The same, with `values` bounding what a query's functions build.
    pub fn with_values(mut self, values: ValueBounds) -> Sql {
        self.values = values;
        self
    }

    /// The same, keeping at most `plans` prepared statements per surface (0: none).
    pub fn with_plans(mut self, plans: u64) -> Sql {
        self.plans = plans;
        self
    }

    /// The same, reading the raw data of at most `runs` runs in one query.
    pub fn with_max_raw_runs(mut self, runs: usize) -> Sql {
        self.max_raw_runs = runs;
        self
    }

    async fn context(
        &self,
        surface: &Surface,
        snapshot: &Arc<Snapshot>,
        derived: &DerivedData,
    ) -> Result<(SessionContext, Plans), SqlError> {
        let generation = snapshot.generation;
        let cached = |all: &Vec<(&'static str, u64, SessionContext, Plans)>| {
            all.iter()
                .find(|(n, g, _, _)| *n == surface.name && *g == generation)
                .map(|(_, _, c, p)| (c.clone(), p.clone()))
        };
        if let Some(found) = cached(&self.contexts.lock().expect("not poisoned")) {
            return Ok(found);
        }
        let ctx = sql::sql_context(snapshot, self.limits.memory_bytes).await?;
        for kind in RawTableKind::ALL {
            let table = RawTable::new(kind, snapshot.clone(), derived.clone(), self.max_raw_runs);
            ctx.register_table(kind.name(), Arc::new(table))
                .map_err(|e| SqlError::Internal(e.to_string()))?;
        }
        (surface.setup)(&ctx).map_err(SqlError::Internal)?;
        sql_bounds::confine(&ctx, self.values);
        let evictions = self.counts.plan_evictions.clone();
        let kept = moka::sync::Cache::builder()
            .max_capacity(self.plans)
            .eviction_listener(move |_k, _v, cause| {
                if cause == moka::notification::RemovalCause::Size {
                    evictions.fetch_add(1, Ordering::Relaxed);
                }
            })
            .build();
        let plans = Plans {
            kept,
            states: Arc::new(sql_prepared::PlanStates::of(&ctx)),
        };
        let mut all = self.contexts.lock().expect("not poisoned");
        all.retain(|(n, _, _, _)| *n != surface.name);
        all.push((surface.name, generation, ctx.clone(), plans.clone()));
        Ok((ctx, plans))
    }

    /// Plan `text` on `surface` under the read-only policy, without running it (a statement a
    /// client describes before binding its parameters).
    pub async fn plan(
        &self,
        surface: &Surface,
        snapshot: &Arc<Snapshot>,
        derived: &DerivedData,
        text: &str,
    ) -> Result<LogicalPlan, SqlError> {
        let (ctx, _) = self.context(surface, snapshot, derived).await?;
        sql::plan(&ctx, text, &self.limits).await
    }

    /// The tables of `surface`'s default schema (`public`) with their Arrow schemas, by name.
    pub async fn tables(
        &self,
        surface: &Surface,
        snapshot: &Arc<Snapshot>,
        derived: &DerivedData,
    ) -> Result<Vec<(String, datafusion::arrow::datatypes::SchemaRef)>, SqlError> {
        let (ctx, _) = self.context(surface, snapshot, derived).await?;
        let schema = ctx
            .catalog("datafusion")
            .and_then(|c| c.schema("public"))
            .ok_or_else(|| SqlError::Internal("no public schema".to_owned()))?;
        let mut names = schema.table_names();
        names.sort();
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            if let Ok(Some(t)) = schema.table(&name).await {
                out.push((name, t.schema()));
            }
        }
        Ok(out)
    }

    /// The queries asked so far, and those not answered by why.
    pub fn stats(&self) -> SqlStats {
        let c = &self.counts;
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        SqlStats {
            queries: l(&c.queries),
            plan_hits: l(&c.plan_hits),
            plan_misses: l(&c.plan_misses),
            plan_evictions: l(&c.plan_evictions),
            refused: l(&c.refused),
            invalid: l(&c.invalid),
            timeouts: l(&c.timeouts),
            memory: l(&c.memory),
            rows: l(&c.rows),
            busy: l(&c.busy),
        }
    }

    /// The functions `surface`'s queries may call, by kind (`scalar`, `aggregate`, `window`,
    /// `table`), sorted.
    pub async fn functions(
        &self,
        surface: &Surface,
        snapshot: &Arc<Snapshot>,
        derived: &DerivedData,
    ) -> Result<Vec<(&'static str, String)>, SqlError> {
        let (ctx, _) = self.context(surface, snapshot, derived).await?;
        Ok(sql_bounds::allowed(&ctx))
    }

    /// Run `text` with `params` on `surface` over `snapshot`, through the gate, under the limits
    /// (a tighter time limit when the client asked for one), counted.
    pub async fn run_on(
        &self,
        surface: &Surface,
        snapshot: &Arc<Snapshot>,
        derived: &DerivedData,
        text: &str,
        params: ParamValues,
        timeout: Option<Duration>,
    ) -> Result<SqlAnswer, SqlFailure> {
        let c = &self.counts;
        c.queries.fetch_add(1, Ordering::Relaxed);
        let out = async {
            // The time limit counts from the query's arrival: its wait for a turn is part of it.
            let arrived = tokio::time::Instant::now();
            let limit = timeout.map_or(self.limits.timeout, |t| t.min(self.limits.timeout));
            let permit = self.turn(limit).await?;
            let (shared, plans) = self.context(surface, snapshot, derived).await?;
            let left = limit.saturating_sub(arrived.elapsed());
            let query = Query {
                counts: self.counts.clone(),
                prepare: self.plans > 0,
                limits: self.limits,
                values: self.values,
                shared,
                plans,
                text: text.to_owned(),
                params,
                timeout: Some(left),
            };
            let runtime = self.runtime.as_ref().expect("present until dropped");
            let task = runtime.spawn(async move {
                let answer = query.run().await;
                drop(permit);
                answer
            });
            let abort = task.abort_handle();
            match tokio::time::timeout(left + Self::GRACE, task).await {
                Ok(Ok(Err(SqlError::Timeout(_)))) => Err(SqlError::Timeout(limit).into()),
                Ok(Ok(answer)) => Ok(answer?),
                Ok(Err(e)) => Err(SqlError::Internal(format!("the query failed: {e}")).into()),
                Err(_) => {
                    // Dropped where it next yields; its turn is given back then.
                    abort.abort();
                    Err(SqlError::Timeout(limit).into())
                }
            }
        }
        .await;
        if let Err(f) = &out {
            let counter = match f {
                SqlFailure::Busy { .. } => &c.busy,
                SqlFailure::Query(SqlError::Refused(_)) => &c.refused,
                SqlFailure::Query(SqlError::Timeout(_)) => &c.timeouts,
                SqlFailure::Query(SqlError::Memory { .. } | SqlError::Value(_)) => &c.memory,
                SqlFailure::Query(SqlError::Rows(_)) => &c.rows,
                SqlFailure::Query(_) => &c.invalid,
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        out
    }

    /// A turn at the gate: at once, or after waiting in the queue (for no longer than the query's
    /// time limit, `limit`); busy when the queue is full or the wait runs out.
    async fn turn(&self, limit: Duration) -> Result<OwnedSemaphorePermit, SqlFailure> {
        let busy = |s: &Sql| SqlFailure::Busy {
            running: s.concurrency,
            waiting: s.waiting.load(Ordering::Relaxed),
            retry_after: Duration::from_secs(1),
        };
        match self.permits.clone().try_acquire_owned() {
            Ok(p) => Ok(p),
            Err(_) => {
                if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.queue {
                    self.waiting.fetch_sub(1, Ordering::AcqRel);
                    return Err(busy(self));
                }
                // Its place is given back however the wait ends: a turn, the time limit, or the
                // caller gone (its client closed the connection and the wait was dropped).
                let place = Place(&self.waiting);
                let got = tokio::time::timeout(limit, self.permits.clone().acquire_owned()).await;
                drop(place);
                match got {
                    Ok(Ok(p)) => Ok(p),
                    _ => Err(busy(self)),
                }
            }
        }
    }
}

/// A place in the queue of queries waiting for a turn, given back when dropped.
struct Place<'a>(&'a AtomicUsize);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One query, with what it runs on: moved to the SQL runtime.
struct Query {
    counts: Arc<Counts>,
    /// Whether statements are prepared and kept (`Sql::plans` above 0).
    prepare: bool,
    limits: SqlLimits,
    values: ValueBounds,
    shared: SessionContext,
    plans: Plans,
    text: String,
    params: ParamValues,
    timeout: Option<Duration>,
}

impl Query {
    async fn run(self) -> Result<SqlAnswer, SqlError> {
        if let Some(answer) = self.prepared().await {
            return answer;
        }
        let ctx = sql::with_own_memory(&self.shared, self.limits.memory_bytes)?;
        sql::run(&ctx, &self.text, self.params, &self.limits, self.timeout).await
    }

    /// The answer of `text`'s prepared statement (planned now if it is new), or none when it is
    /// to be run as written: not one query, not preparable, or values that do not bind.
    async fn prepared(&self) -> Option<Result<SqlAnswer, SqlError>> {
        let (ctx, plans, text, params, timeout) = (
            &self.shared,
            &self.plans,
            self.text.as_str(),
            &self.params,
            self.timeout,
        );
        if !self.prepare {
            return None;
        }
        let lifted = sql_prepared::lift(text)?;
        // A value over the value bound is refused by the plan's check, which a prepared plan
        // (checked with placeholders) would not see: such a query is run as written.
        let over = |v: &datafusion::common::ScalarValue| {
            sql_bounds::scalar_bytes(v) > self.values.value_bytes
        };
        let given_over = match params {
            ParamValues::List(given) => given.iter().any(|p| over(&p.value)),
            ParamValues::Map(given) => given.values().any(|p| over(&p.value)),
        };
        if given_over || lifted.values.iter().any(over) {
            return None;
        }
        let plan = match plans.kept.get(&lifted.key) {
            Some(plan) => {
                self.counts.plan_hits.fetch_add(1, Ordering::Relaxed);
                plan
            }
            None => {
                self.counts.plan_misses.fetch_add(1, Ordering::Relaxed);
                // Lifted by its shape, without its statement: parsed now, to be planned.
                let parsed;
                let statement = if lifted.has_statement() {
                    &lifted
                } else {
                    parsed = sql_prepared::lift_parsed(text)?;
                    &parsed
                };
                // A statement that does not prepare is run as written, which says why.
                let plan = Arc::new(
                    match sql_prepared::prepare(ctx, &plans.states, statement, &self.limits).await {
                        Ok(p) => Plan::Ready(p),
                        Err(_) => Plan::AsWritten,
                    },
                );
                plans.kept.insert(lifted.key.clone(), plan.clone());
                plan
            }
        };
        let Plan::Ready(prepared) = &*plan else {
            return None;
        };
        match sql_prepared::run_prepared(
            &plans.states,
            prepared,
            &lifted,
            params,
            &self.limits,
            timeout,
        )
        .await
        {
            Ok(answer) => Some(Ok(answer)),
            Err(PreparedError::Failed(e)) => Some(Err(e)),
            Err(PreparedError::Unbound) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait for a turn whose caller is gone gives its place in the queue back: queries whose
    /// clients left while they waited do not fill the queue for good.
    #[tokio::test]
    async fn a_wait_given_up_gives_its_place_back() {
        let sql = Sql::new(SqlLimits::default(), 1, 1);
        let running = sql.turn(Duration::from_secs(5)).await.unwrap();
        for _ in 0..3 {
            let wait = sql.turn(Duration::from_secs(5));
            // The wait takes the one place, then its caller gives it up.
            assert!(
                tokio::time::timeout(Duration::from_millis(20), wait)
                    .await
                    .is_err()
            );
            assert_eq!(sql.waiting.load(Ordering::Relaxed), 0);
        }
        let next = tokio::spawn(async move {
            let waited = sql.turn(Duration::from_secs(5)).await.is_ok();
            (waited, sql)
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(running);
        let (waited, sql) = next.await.unwrap();
        assert!(waited, "the next query waits for its turn and gets it");
        assert_eq!(sql.waiting.load(Ordering::Relaxed), 0);
        // A query past the one place is refused at once.
        let _running = sql.turn(Duration::from_secs(5)).await.unwrap();
        let waiting = sql.turn(Duration::from_secs(5));
        tokio::pin!(waiting);
        assert!(
            tokio::time::timeout(Duration::from_millis(20), &mut waiting)
                .await
                .is_err()
        );
        assert!(matches!(
            sql.turn(Duration::from_secs(5)).await,
            Err(SqlFailure::Busy { .. })
        ));
    }
}
