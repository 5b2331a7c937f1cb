//! SQL tables of raw-derived data: `llm_itl` (run_id, itl_s: the smoothed inter-token latencies
//! of /itl), `llm_output_lengths` (run_id, output_len: the successful requests' lengths of
//! /output-lengths) and `timelines` (run_id, metric, gpu, relative_time_s, value: every metric
//! per GPU of /timeline). A query reads the runs its `run_id` predicates name (`=`, `IN`, pushed
//! down by the planner), or every run with a raw file; one that would read more than a limit of
//! runs is refused before anything is fetched. Runs are read through the derived-data service
//! (memory, persisted copy, raw cache).

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, ScalarValue};
use datafusion::datasource::TableType;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::logical_expr::{Expr, Operator, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use super::derived::DerivedData;
use super::snapshot::{RawFile, Snapshot};
use crate::engine::Domain;
use crate::rawfile::timeline::{Metric, run_timeline};
use crate::rawfile::{itl_samples, output_lengths};

/// Runs one query may read the raw data of, unless configured otherwise.
pub const MAX_RAW_RUNS: usize = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawTableKind {
    Itl,
    OutputLengths,
    Timelines,
}

impl RawTableKind {
    pub const ALL: [RawTableKind; 3] = [
        RawTableKind::Itl,
        RawTableKind::OutputLengths,
        RawTableKind::Timelines,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RawTableKind::Itl => "llm_itl",
            RawTableKind::OutputLengths => "llm_output_lengths",
            RawTableKind::Timelines => "timelines",
        }
    }

    /// Its columns: (name, type, unit, description).
    pub fn columns(
        self,
    ) -> &'static [(
        &'static str,
        &'static str,
        Option<&'static str>,
        &'static str,
    )] {
        match self {
            RawTableKind::Itl => &[
                ("run_id", "Utf8", None, "The run (llm_runs.run_id)."),
                (
                    "i",
                    "Int64",
                    None,
                    "The sample's place in the run's order (0-based): ORDER BY i gives /v1/llm/itl's order.",
                ),
                (
                    "itl_s",
                    "Float64",
                    Some("s"),
                    "A smoothed inter-token latency (as /v1/llm/itl).",
                ),
            ],
            RawTableKind::OutputLengths => &[
                ("run_id", "Utf8", None, "The run (llm_runs.run_id)."),
                (
                    "output_len",
                    "Int64",
                    Some("tokens"),
                    "A successful request's output length (as /v1/llm/output-lengths).",
                ),
            ],
            RawTableKind::Timelines => &[
                (
                    "run_id",
                    "Utf8",
                    None,
                    "The run (llm_runs.run_id or diffusion_runs.run_id).",
                ),
                (
                    "metric",
                    "Utf8",
                    None,
                    "power.device_instant, power.device_average or temperature.",
                ),
                ("gpu", "Int64", None, "The GPU's id."),
                (
                    "relative_time_s",
                    "Float64",
                    Some("s"),
                    "Seconds since the run's first sample.",
                ),
                ("value", "Float64", None, "W for power, °C for temperature."),
            ],
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            RawTableKind::Itl => {
                "Smoothed inter-token latencies of LLM runs with a raw file, read when a query names them."
            }
            RawTableKind::OutputLengths => {
                "Output lengths of the successful requests of LLM runs with a raw file, read when a query names them."
            }
            RawTableKind::Timelines => {
                "Power and temperature per GPU of runs of both domains with a raw file, read when a query names them."
            }
        }
    }

    fn domains(self) -> &'static [Domain] {
        match self {
            RawTableKind::Timelines => &Domain::ALL,
            _ => &[Domain::Llm],
        }
    }

    fn schema(self) -> SchemaRef {
        let fields: Vec<Field> = self
            .columns()
            .iter()
            .map(|(name, ty, _, _)| {
                let dt = match *ty {
                    "Utf8" => DataType::Utf8,
                    "Int64" => DataType::Int64,
                    _ => DataType::Float64,
                };
                Field::new(*name, dt, false)
            })
            .collect();
        Arc::new(Schema::new(fields))
    }
}

/// One raw-derived table of one snapshot.
pub struct RawTable {
    kind: RawTableKind,
    snapshot: Arc<Snapshot>,
    derived: DerivedData,
    max_runs: usize,
    schema: SchemaRef,
}

impl std::fmt::Debug for RawTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawTable")
            .field("kind", &self.kind)
            .field("generation", &self.snapshot.generation)
            .finish()
    }
}

impl RawTable {
    pub fn new(
        kind: RawTableKind,
        snapshot: Arc<Snapshot>,
        derived: DerivedData,
        max_runs: usize,
    ) -> Self {
        RawTable {
            kind,
            snapshot,
            derived,
            max_runs,
            schema: kind.schema(),
        }
    }
}

/// The run ids a predicate restricts `run_id` to, if it is one this table pushes down.
fn run_ids(e: &Expr) -> Option<BTreeSet<String>> {
    let text = |e: &Expr| match e {
        Expr::Literal(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
            _,
        ) => Some(s.clone()),
        _ => None,
    };
    match e {
        Expr::BinaryExpr(b) if b.op == Operator::Eq => {
            if is_run_id(&b.left) {
                text(&b.right).map(|s| BTreeSet::from([s]))
            } else if is_run_id(&b.right) {
                text(&b.left).map(|s| BTreeSet::from([s]))
            } else {
                None
            }
        }
        Expr::InList(l) if !l.negated && is_run_id(&l.expr) => l.list.iter().map(text).collect(),
        _ => None,
    }
}

fn is_run_id(e: &Expr) -> bool {
    matches!(e, Expr::Column(c) if c.name == "run_id")
}

/// A `run_id` predicate whose values are placeholders of a prepared statement
/// (`engine::sql_prepared`): pushed into the scan like `run_ids`' so that, once bound, the scan
/// reads the runs it names.
fn run_id_placeholders(e: &Expr) -> bool {
    let value = |e: &Expr| matches!(e, Expr::Placeholder(_) | Expr::Literal(..));
    match e {
        Expr::BinaryExpr(b) if b.op == Operator::Eq => {
            (is_run_id(&b.left) && value(&b.right)) || (is_run_id(&b.right) && value(&b.left))
        }
        Expr::InList(l) if !l.negated && is_run_id(&l.expr) => l.list.iter().all(value),
        _ => false,
    }
}

#[async_trait]
impl TableProvider for RawTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> datafusion::common::Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| {
                if run_ids(f).is_some() || run_id_placeholders(f) {
                    TableProviderFilterPushDown::Inexact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        // The runs named: the intersection of every run_id predicate; none: every run.
        let mut named: Option<BTreeSet<String>> = None;
        for f in filters {
            if let Some(ids) = run_ids(f) {
                named = Some(match named {
                    None => ids,
                    Some(prev) => prev.intersection(&ids).cloned().collect(),
                });
            }
        }
        let mut runs: Vec<(Domain, usize)> = Vec::new();
        for &d in self.kind.domains() {
            let t = self.snapshot.table(d);
            match &named {
                Some(ids) => runs.extend(ids.iter().filter_map(|id| t.row_of(id)).map(|r| (d, r))),
                None => runs.extend((0..t.len()).map(|r| (d, r))),
            }
        }
        // Only runs with a raw file to read.
        runs.retain(|&(d, r)| self.snapshot.raw_location(d, r, RawFile::Results).is_ok());
        if runs.len() > self.max_runs {
            return Err(DataFusionError::Plan(format!(
                "{} would read the raw data of {} runs, more than the limit of {}: name the runs with run_id = '...' or run_id IN (...)",
                self.kind.name(),
                runs.len(),
                self.max_runs
            )));
        }
        let mut batches = Vec::with_capacity(runs.len());
        for (d, row) in runs {
            let run_id = self.snapshot.table(d).run_id(row).to_string();
            let raw = self
                .derived
                .get(&self.snapshot, d, row)
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            let external = |e: crate::rawfile::RawError| {
                DataFusionError::Execution(format!("raw data of run '{run_id}': {e}"))
            };
            let columns: Vec<ArrayRef> = match self.kind {
                RawTableKind::Itl => {
                    let s = itl_samples(&raw).map_err(external)?;
                    vec![
                        Arc::new(StringArray::from(vec![run_id.as_str(); s.len()])),
                        Arc::new(Int64Array::from_iter_values(0..s.len() as i64)),
                        Arc::new(Float64Array::from(s.joined().to_vec())),
                    ]
                }
                RawTableKind::OutputLengths => {
                    let v = output_lengths(&raw, false).map_err(external)?;
                    vec![
                        Arc::new(StringArray::from(vec![run_id.as_str(); v.len()])),
                        Arc::new(Int64Array::from(v)),
                    ]
                }
                RawTableKind::Timelines => {
                    let (mut metric, mut gpu, mut time, mut value) =
                        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                    for m in [
                        Metric::DeviceInstant,
                        Metric::DeviceAverage,
                        Metric::Temperature,
                    ] {
                        // A metric the file does not have contributes no rows.
                        let Ok(t) = run_timeline(&raw.timeline, m, d == Domain::Llm) else {
                            continue;
                        };
                        for (id, values) in &t.devices {
                            for (x, v) in t.relative_time_s.iter().zip(values) {
                                if let Some(v) = v {
                                    metric.push(m.name());
                                    gpu.push(*id);
                                    time.push(*x);
                                    value.push(*v);
                                }
                            }
                        }
                    }
                    vec![
                        Arc::new(StringArray::from(vec![run_id.as_str(); metric.len()])),
                        Arc::new(StringArray::from(metric)),
                        Arc::new(Int64Array::from(gpu)),
                        Arc::new(Float64Array::from(time)),
                        Arc::new(Float64Array::from(value)),
                    ]
                }
            };
            batches.push(RecordBatch::try_new(self.schema.clone(), columns)?);
        }
        let exec =
            MemorySourceConfig::try_new_exec(&[batches], self.schema.clone(), projection.cloned())?;
        Ok(exec)
    }
}
