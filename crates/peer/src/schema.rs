//! The normalised measurement tables (peer-formats §4.3) that imports fill: their columns, types,
//! units, meanings and, for derived columns, the formula. One macro declares each table once: the
//! row struct the readers fill, the column catalog (`GET /v1/measurements/fields`, OpenAPI) and
//! the conversion of rows into a [`Frame`].

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, BooleanArray, DictionaryArray, NullBufferBuilder,
    PrimitiveArray, RecordBatch, StringArray, UInt32Array,
};
use arrow::buffer::ScalarBuffer;
use arrow::datatypes::{DataType, Field, Float64Type, Int32Type, Int64Type, Schema, SchemaRef};

use mlenergy_engine::arrow_conv::Columns;
use mlenergy_engine::frame::{ColumnData, Frame, FrameColumn};

/// A column's type as served: JSON-valued columns are lists or objects in JSON answers, text
/// elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    Str,
    Int,
    Float,
    Bool,
    Json,
}

impl ColType {
    pub fn name(self) -> &'static str {
        match self {
            ColType::Str => "string",
            ColType::Int => "int64",
            ColType::Float => "double",
            ColType::Bool => "bool",
            ColType::Json => "json",
        }
    }

    pub fn is_numeric(self) -> bool {
        matches!(self, ColType::Int | ColType::Float)
    }

    /// An empty column of this type with room for `n` values.
    pub fn column(self, n: usize) -> ColumnData {
        match self {
            ColType::Str => ColumnData::Str(Vec::with_capacity(n)),
            ColType::Json => ColumnData::Json(Vec::with_capacity(n)),
            ColType::Int => ColumnData::Int(Vec::with_capacity(n)),
            ColType::Float => ColumnData::Float(Vec::with_capacity(n)),
            ColType::Bool => ColumnData::Bool(Vec::with_capacity(n)),
        }
    }
}

/// One column of a measurement table.
#[derive(Debug, Clone, Copy)]
pub struct Col {
    pub name: &'static str,
    pub ty: ColType,
    pub unit: Option<&'static str>,
    pub description: &'static str,
    /// `None`: as the source reported it (or an identifier). `Some(formula)`: recomputed here.
    pub derived: Option<&'static str>,
}

/// Text cells are shared: a run id repeated on a million sample rows is one allocation.
pub type Text = Arc<str>;

/// A column being filled row by row, kept in Arrow's layout: an import writes it to parquet
/// without converting it, and `serve --import` turns it into a frame column.
pub trait Column: Default {
    type Cell;
    fn put(&mut self, v: Self::Cell);
    fn reserve(&mut self, n: usize);
    /// Another column's rows appended after these.
    fn append(&mut self, other: Self);
    fn into_data(self) -> ColumnData;
    fn into_array(self) -> ArrayRef;
}

/// Values and their validity in Arrow's layout (no validity is kept until a null arrives); the
/// vector becomes the array's buffer without a copy.
#[derive(Debug)]
pub struct Prim<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    nulls: NullBufferBuilder,
}

impl<T: ArrowPrimitiveType> Default for Prim<T> {
    fn default() -> Self {
        Prim {
            values: Vec::new(),
            nulls: NullBufferBuilder::new(0),
        }
    }
}

impl<T: ArrowPrimitiveType> Prim<T> {
    fn put(&mut self, v: Option<T::Native>) {
        match v {
            Some(x) => {
                self.values.push(x);
                self.nulls.append_non_null();
            }
            None => {
                self.values.push(T::Native::default());
                self.nulls.append_null();
            }
        }
    }

    /// `n` copies of one cell.
    fn put_n(&mut self, v: Option<T::Native>, n: usize) {
        self.values
            .extend(std::iter::repeat_n(v.unwrap_or_default(), n));
        match v {
            Some(_) => self.nulls.append_n_non_nulls(n),
            None => self.nulls.append_n_nulls(n),
        }
    }

    /// Every value of an iterator, none null.
    fn extend(&mut self, values: impl ExactSizeIterator<Item = T::Native>) {
        let n = values.len();
        self.values.extend(values);
        self.nulls.append_n_non_nulls(n);
    }

    /// Another's values and validity appended after these.
    fn append(&mut self, mut other: Prim<T>) {
        let n = other.values.len();
        self.values.append(&mut other.values);
        match other.nulls.finish() {
            Some(nulls) => self.nulls.append_buffer(&nulls),
            None => self.nulls.append_n_non_nulls(n),
        }
    }

    fn finish(mut self) -> PrimitiveArray<T> {
        PrimitiveArray::new(ScalarBuffer::from(self.values), self.nulls.finish())
    }
}

/// Text: each distinct value once, a key per row (an Arrow dictionary). Rows that share one `Arc`
/// (consecutive rows of one run) find their key by pointer, without hashing the text.
#[derive(Debug, Default)]
pub struct TextColumn {
    keys: Prim<Int32Type>,
    values: Vec<Text>,
    index: HashMap<Text, i32>,
    last: Option<(Text, i32)>,
}

impl TextColumn {
    /// The key of a text, added to the values when it is new.
    fn key(&mut self, s: Text) -> i32 {
        if let Some((last, k)) = &self.last
            && Arc::ptr_eq(last, &s)
        {
            return *k;
        }
        let next = self.values.len() as i32;
        let k = *self.index.entry(s.clone()).or_insert(next);
        if k == next {
            self.values.push(s.clone());
        }
        self.last = Some((s, k));
        k
    }

    /// `n` rows of one cell.
    fn put_n(&mut self, v: Option<Text>, n: usize) {
        let k = v.map(|s| self.key(s));
        self.keys.put_n(k, n);
    }
}

impl Column for TextColumn {
    type Cell = Option<Text>;
    fn put(&mut self, v: Option<Text>) {
        let k = v.map(|s| self.key(s));
        self.keys.put(k);
    }
    fn reserve(&mut self, n: usize) {
        self.keys.values.reserve(n);
    }
    fn append(&mut self, mut other: TextColumn) {
        // The other's values follow these, its keys shifted past them: no text is hashed, and a
        // text both hold is held twice (an Arrow dictionary may hold a value twice; a parquet
        // one is written with each once). Texts put later are looked up among these only.
        let shift = self.values.len() as i32;
        other.keys.values.iter_mut().for_each(|k| *k += shift);
        self.values.append(&mut other.values);
        self.keys.append(other.keys);
    }
    fn into_data(self) -> ColumnData {
        let values = self.values;
        ColumnData::Str(
            self.keys
                .finish()
                .iter()
                .map(|k| k.map(|k| values[k as usize].clone()))
                .collect(),
        )
    }
    fn into_array(self) -> ArrayRef {
        let values = StringArray::from_iter_values(self.values.iter().map(|v| &**v));
        Arc::new(
            DictionaryArray::<Int32Type>::try_new(self.keys.finish(), Arc::new(values))
                .expect("every key indexes the values"),
        )
    }
}

/// Cells kept as they are: JSON text (one document per row, rarely repeated) and booleans (one per
/// run or request).
#[derive(Debug)]
pub struct Cells<T>(Vec<Option<T>>);

impl<T> Default for Cells<T> {
    fn default() -> Self {
        Cells(Vec::new())
    }
}

/// How kept cells become a frame column and an Arrow array.
pub trait Kept: Sized {
    fn data(v: Vec<Option<Self>>) -> ColumnData;
    fn array(v: Vec<Option<Self>>) -> ArrayRef;
}

impl Kept for Text {
    fn data(v: Vec<Option<Text>>) -> ColumnData {
        ColumnData::Json(v)
    }
    fn array(v: Vec<Option<Text>>) -> ArrayRef {
        Arc::new(v.iter().map(|v| v.as_deref()).collect::<StringArray>())
    }
}

impl Kept for bool {
    fn data(v: Vec<Option<bool>>) -> ColumnData {
        ColumnData::Bool(v)
    }
    fn array(v: Vec<Option<bool>>) -> ArrayRef {
        Arc::new(v.into_iter().collect::<BooleanArray>())
    }
}

impl<T: Kept> Column for Cells<T> {
    type Cell = Option<T>;
    fn put(&mut self, v: Option<T>) {
        self.0.push(v);
    }
    fn reserve(&mut self, n: usize) {
        self.0.reserve(n);
    }
    fn append(&mut self, mut other: Self) {
        self.0.append(&mut other.0);
    }
    fn into_data(self) -> ColumnData {
        T::data(self.0)
    }
    fn into_array(self) -> ArrayRef {
        T::array(self.0)
    }
}

macro_rules! number_column {
    ($name:ident, $arrow:ty, $cell:ty, $data:ident, $clean:expr) => {
        #[derive(Debug, Default)]
        pub struct $name(Prim<$arrow>);

        impl Column for $name {
            type Cell = Option<$cell>;
            fn put(&mut self, v: Option<$cell>) {
                let clean: fn(Option<$cell>) -> Option<$cell> = $clean;
                self.0.put(clean(v));
            }
            fn reserve(&mut self, n: usize) {
                self.0.values.reserve(n);
            }
            fn append(&mut self, other: Self) {
                self.0.append(other.0);
            }
            fn into_data(self) -> ColumnData {
                ColumnData::$data(self.0.finish().iter().collect())
            }
            fn into_array(self) -> ArrayRef {
                Arc::new(self.0.finish())
            }
        }
    };
}

number_column!(IntColumn, Int64Type, i64, Int, |v| v);
// Non-finite floats are stored as null.
number_column!(FloatColumn, Float64Type, f64, Float, |v| v
    .filter(|x| x.is_finite()));

macro_rules! cell_type {
    (Str) => { Option<Text> };
    (Json) => { Option<Text> };
    (Int) => { Option<i64> };
    (Float) => { Option<f64> };
    (Bool) => { Option<bool> };
}

macro_rules! column_type {
    (Str) => {
        TextColumn
    };
    (Json) => {
        Cells<Text>
    };
    (Int) => {
        IntColumn
    };
    (Float) => {
        FloatColumn
    };
    (Bool) => {
        Cells<bool>
    };
}

macro_rules! opt {
    () => {
        None
    };
    ($e:expr) => {
        Some($e)
    };
}

/// The Arrow field of a catalog column holding `array` (nullable when it holds a null; JSON
/// columns carry the `arrow.json` extension type, as the frames' batches do).
fn field(c: &Col, array: &ArrayRef) -> Field {
    let f = Field::new(c.name, array.data_type().clone(), array.null_count() > 0);
    match c.ty {
        ColType::Json => f.with_metadata(
            [("ARROW:extension:name".to_string(), "arrow.json".to_string())]
                .into_iter()
                .collect(),
        ),
        _ => f,
    }
}

/// `table!(Row, Rows, COLUMNS, { field: Type, unit, "description" [, "formula"]; ... })`: the row
/// struct a reader fills, the table that keeps pushed rows column by column in Arrow's layout, and
/// the column catalog.
macro_rules! table {
    ($row:ident, $rows:ident, $cols:ident, { $( $field:ident : $ty:ident, $unit:expr, $desc:expr $(, $formula:expr)? ; )* }) => {
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct $row {
            $( pub $field: cell_type!($ty), )*
        }

        #[derive(Debug, Default)]
        pub struct $rows {
            len: usize,
            $( $field: column_type!($ty), )*
        }

        pub const $cols: &[Col] = &[
            $( Col { name: stringify!($field), ty: ColType::$ty, unit: $unit, description: $desc, derived: opt!($($formula)?) }, )*
        ];

        impl $rows {
            pub fn push(&mut self, r: $row) {
                $( self.$field.put(r.$field); )*
                self.len += 1;
            }

            pub fn len(&self) -> usize {
                self.len
            }

            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// Room for `n` more rows.
            pub fn reserve(&mut self, n: usize) {
                $( self.$field.reserve(n); )*
            }

            /// Another table's rows appended after these.
            pub fn append(&mut self, other: $rows) {
                $( self.$field.append(other.$field); )*
                self.len += other.len;
            }

            /// The table as a frame with every column, in catalog order.
            pub fn into_frame(self) -> Frame {
                Frame {
                    columns: vec![
                        $( FrameColumn { name: stringify!($field).to_string(), data: self.$field.into_data() }, )*
                    ],
                }
            }

            /// The table as a record batch with every column, in catalog order (text as
            /// dictionaries), as an import writes it.
            pub fn into_batch(self) -> RecordBatch {
                let arrays: Vec<ArrayRef> = vec![ $( self.$field.into_array(), )* ];
                let fields: Vec<Field> = $cols.iter().zip(&arrays).map(|(c, a)| field(c, a)).collect();
                RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
                    .expect("every column has the table's length")
            }
        }

        impl From<Vec<$row>> for $rows {
            fn from(rows: Vec<$row>) -> $rows {
                let mut t = $rows::default();
                t.reserve(rows.len());
                for r in rows {
                    t.push(r);
                }
                t
            }
        }
    };
}

const J: Option<&str> = Some("J");
const W: Option<&str> = Some("W");
const S: Option<&str> = Some("s");
const TOK: Option<&str> = Some("tokens");
const N: Option<&str> = None;

table!(SourceRow, SourceRows, SOURCE_COLUMNS, {
    source_id: Str, N, "Import source id: `{kind}-{8 hex}`, the kind and a hash of the imported path; every run id of the source starts with it.";
    kind: Str, N, "Source kind: mlenergy_v3, lem_v1, lem_v2, ipw_profile or ipw_agentic.";
    origin: Str, N, "Where it was imported from (the path given to `import`; for ML.ENERGY the served dataset).";
    tool_version: Str, N, "The tool's version or schema version as the source states it (LEM schema_version, IPW versions.ipw).";
    content_hash: Str, N, "BLAKE3 over every file read, in path order: its path, a zero byte and the BLAKE3 of its bytes (changes when any file changes).";
    ingested_at: Str, N, "When the import ran (RFC 3339, UTC).";
    parser_version: Int, N, "Version of this importer's rules; a newer importer re-reads the source.";
    runs: Int, N, "Runs imported from the source.";
    files_read: Int, N, "Files read.";
    files_failed: Json, N, "Files that could not be read, each {path, reason}; the rest of the source was still imported.";
    warnings: Json, N, "Warnings about the source as a whole.";
});

table!(RunRow, RunRows, RUN_COLUMNS, {
    run_id: Str, N, "`{source_id}~{local_id}`: unique across sources (LEM's 4-digit ids collide across machines).";
    source_id: Str, N, "The import source (see /v1/measurements/sources).";
    source_kind: Str, N, "mlenergy_v3, lem_v1, lem_v2, ipw_profile or ipw_agentic.";
    local_id: Str, N, "The run's id in its source: LEM experiment id (with `_c<k>` for cycles), the result directory name, or the ML.ENERGY run id.";
    experiment_id: Str, N, "The group of repeats this run belongs to: LEM base id (cycles share it) or LEM v2 measurement_config_hash, namespaced by the source (`{source_id}~{id}`: LEM's counters repeat across machines); IPW (model, hardware, dataset, concurrency), which repeated profiles share across sources; ML.ENERGY run id without its seed.";
    repeat_index: Int, N, "Cycle number (LEM `_c<k>`) or seed (ML.ENERGY); null when the source has none.";
    model: Str, N, "Model as the source names it (a Hugging Face id, or an ollama tag for IPW).";
    hardware: Str, N, "Accelerator model, normalised (H100, H200, B200, A100, L40S, RTX4090, MI300X), else as reported.";
    hardware_raw: Str, N, "Accelerator name as the source reports it.";
    num_gpus: Int, N, "GPUs the run used; null when the source does not record it (IPW).";
    task: Str, N, "Workload: ML.ENERGY task, LEM dataset name, IPW dataset.";
    workload_kind: Str, N, "single_turn or agentic.";
    engine: Str, N, "Serving engine or client: vllm, pytorch, tensorrt (LEM backend), the IPW client or agent.";
    batch_value: Int, N, "The batch knob's value; what it means is batch_semantics.";
    batch_semantics: Str, N, "max_num_seqs (a vLLM cap), static_batch_size (LEM pytorch) or client_concurrency (IPW).";
    started_at: Str, N, "Start time as the source wrote it.";
    ended_at: Str, N, "End time as the source wrote it.";
    wall_s: Float, S, "Wall time from the first start to the last end.";
    energy_j: Float, J, "The run's primary energy, in energy_scope over window with attribution. LEM v1: Σ gpu_energy_j (scope gpu) when every process has it, else Σ total_energy_j (gpu_cpu_ram). IPW: Σ per-query energy. ML.ENERGY: steady_state_energy_joules.";
    energy_scope: Str, N, "What hardware energy_j covers: gpu, gpu_cpu_ram, soc, cpu_pkg, dram, node.";
    window: Str, N, "What time span energy_j covers: steady_state, inference_only, per_query_sum, entire_benchmark.";
    window_s: Float, S, "Length of the window: steady-state duration, the longest process's inference time (LEM), Σ query seconds (IPW).";
    attribution: Str, N, "measured, or shared_by_concurrency (IPW concurrent runner: energy split among the queries in flight).";
    token_basis: Str, N, "Tokens the per-token metrics count: always `output` here (LEM's own per-token figures count input+output).";
    gpu_energy_j: Float, J, "GPU energy, summed over processes or GPUs.";
    cpu_energy_j: Float, J, "CPU energy (LEM CodeCarbon, IPW CPU rail).";
    ram_energy_j: Float, J, "RAM energy (LEM CodeCarbon).";
    soc_energy_j: Float, J, "Apple SoC energy (IPW basis soc).";
    gpu_cpu_ram_energy_j: Float, J, "LEM v1 total_energy_j summed over processes: CodeCarbon CPU+GPU+RAM.";
    baseline_power_w: Float, W, "Idle baseline power the source recorded (LEM v2).";
    adjusted_energy_j: Float, J, "Baseline-adjusted energy.", "energy_j - baseline_power_w * window_s";
    requests: Int, N, "Requests or queries sent.";
    requests_completed: Int, N, "Requests that completed (ML.ENERGY completed_requests; IPW rows with output).";
    input_tokens: Int, TOK, "Input tokens, summed.";
    output_tokens: Int, TOK, "Output tokens, summed (ML.ENERGY: total_output_tokens of the whole run).";
    energy_per_output_token_j: Float, Some("J/token"), "Energy per output token. ML.ENERGY reports it over the steady state (its energy_per_token_joules); for the others it is recomputed.", "energy_j / output_tokens";
    tokens_per_joule: Float, Some("tokens/J"), "Output tokens per joule.", "1 / energy_per_output_token_j";
    energy_per_request_j: Float, J, "Energy per request (ML.ENERGY: energy_per_request_joules).", "energy_j / requests";
    output_tps: Float, Some("tokens/s"), "System output throughput: ML.ENERGY steady state; LEM mean per-process throughput × processes; IPW Σ output / Σ query seconds (sequential) or over the span of the queries (concurrent).";
    output_tps_per_process: Float, Some("tokens/s"), "LEM avg_tokens_per_second: the mean of the per-process throughputs.";
    avg_power_w: Float, W, "Average power over the window, summed over GPUs (ML.ENERGY avg_power_watts; LEM Σ gpu_power_w in scope gpu).", "energy_j / window_s where the source reports none";
    ttft_mean_s: Float, S, "Mean time to first token (LEM: over the pooled samples of every process).";
    ttft_p50_s: Float, S, "Median time to first token (linear interpolation).";
    ttft_p95_s: Float, S, "95th percentile time to first token.";
    ttft_p99_s: Float, S, "99th percentile time to first token.";
    itl_mean_s: Float, S, "Mean inter-token latency (LEM: trimmed samples pooled over processes; ML.ENERGY: smoothed).";
    itl_p50_s: Float, S, "Median inter-token latency.";
    itl_p95_s: Float, S, "95th percentile inter-token latency.";
    itl_p99_s: Float, S, "99th percentile inter-token latency.";
    itl_kind: Str, N, "Which ITL the itl_* columns are: smoothed (ML.ENERGY), trimmed (LEM).";
    flops: Float, Some("FLOP"), "Floating-point operations as the source estimated them (LEM total_flops, IPW Σ total_flops).";
    mfu: Float, None, "Model FLOPs utilisation where a peak entry exists (bf16 dense: H100 989.5, H200 989.5, B200 2250, A100 312, L40S 183, RTX4090 165.2, MI300X 1307.4 TFLOPS). ML.ENERGY counts decode FLOPs only (2 × activated params per output token).", "flops / window_s / (num_gpus * peak)";
    accuracy: Float, None, "Correct / scored (IPW evaluation.is_correct or is_resolved).";
    ipj: Float, Some("1/J"), "Intelligence per joule, normalised: accuracy over the MEAN per-query energy (IPW's agentic summary divides by the total; its reported value is in evaluation_summary).", "accuracy / mean(query energy)";
    ipw: Float, Some("1/W"), "Intelligence per watt: accuracy over the mean per-query power.", "accuracy / mean(query power)";
    is_stable: Bool, N, "ML.ENERGY is_stable; LEM: temporal overlap and GPU attribution verified and energy tracked; null for IPW.";
    warnings: Json, N, "Data-quality and parse warnings of the run (unknown fields kept are listed in extra).";
    extra: Json, N, "Fields of the source's run document this importer does not read, kept as they were.";
});

table!(RunMetricRow, RunMetricRows, RUN_METRIC_COLUMNS, {
    run_id: Str, N, "The run.";
    metric: Str, N, "Metric name as the source spells it, e.g. avg_energy_per_token_j.";
    value: Float, N, "The value as reported.";
    unit: Str, N, "Unit as reported.";
    source_field: Str, N, "Dotted path of the field in the source document.";
});

table!(RequestRow, RequestRows, REQUEST_COLUMNS, {
    run_id: Str, N, "The run.";
    request_index: Int, N, "0-based, in the source's order.";
    query_id: Str, N, "The source's query id (IPW agentic q0000...).";
    input_tokens: Int, TOK, "Input tokens.";
    output_tokens: Int, TOK, "Output tokens.";
    success: Bool, N, "Completed (IPW: produced output; agentic: completed).";
    ttft_s: Float, S, "Time to first token.";
    latency_s: Float, S, "End-to-end latency (IPW total_query_seconds, agentic total_wall_clock_s).";
    energy_j: Float, J, "Energy of the query (IPW per_query_joules, or soc_per_query_joules on the soc basis).";
    energy_scope: Str, N, "gpu or soc.";
    attribution: Str, N, "measured or shared_by_concurrency.";
    total_energy_j: Float, J, "Whole-device energy during the query (IPW total_joules; differs from energy_j under concurrency).";
    prefill_energy_j: Float, J, "IPW phase_metrics.prefill_energy_j.";
    decode_energy_j: Float, J, "IPW phase_metrics.decode_energy_j.";
    avg_power_w: Float, W, "IPW power_metrics.gpu.per_query_watts.avg (agentic: query_gpu_power_avg_watts).";
    flops: Float, Some("FLOP"), "IPW compute_metrics.total_flops.";
    mfu: Float, None, "IPW hardware_utilization.derived.mfu, as reported.";
    cost_usd: Float, Some("USD"), "IPW cost.total_cost_usd (agentic total_cost_usd).";
    is_correct: Bool, N, "IPW evaluation.is_correct (else lm_correctness); agentic is_resolved.";
    evaluation: Json, N, "IPW evaluation.metadata parsed (it is JSON text in the source).";
});

table!(TurnRow, TurnRows, TURN_COLUMNS, {
    run_id: Str, N, "The run.";
    request_index: Int, N, "The query (0-based line of traces.jsonl).";
    turn_index: Int, N, "The turn in the query.";
    input_tokens: Int, TOK, "Input tokens of the turn.";
    output_tokens: Int, TOK, "Output tokens of the turn.";
    tool_result_tokens: Int, TOK, "Tokens of tool results fed back.";
    wall_s: Float, S, "Wall clock of the turn.";
    gpu_energy_j: Float, J, "GPU energy of the turn: measured over the LM inference, or the query's energy shared by wall clock (see attribution).";
    cpu_energy_j: Float, J, "CPU energy of the turn.";
    gpu_power_avg_w: Float, W, "Average GPU power of the turn.";
    cpu_power_avg_w: Float, W, "Average CPU power of the turn.";
    cost_usd: Float, Some("USD"), "Cost of the turn.";
    error: Str, N, "The turn's error, if any.";
    attribution: Str, N, "measured, or wall_clock_share when the query's energy is spread over its turns by wall clock.";
    tools: Int, N, "Tool calls in the turn.";
});

table!(ToolCallRow, ToolCallRows, TOOL_CALL_COLUMNS, {
    run_id: Str, N, "The run.";
    request_index: Int, N, "The query.";
    turn_index: Int, N, "The turn.";
    ordinal: Int, N, "Order of the call in the turn.";
    tool_name: Str, N, "Tool called.";
    latency_s: Float, S, "Latency IPW recorded for the tool in this turn (keyed by name in the source: repeated calls of one tool share it).";
});

table!(TimeseriesRow, TimeseriesRows, TIMESERIES_COLUMNS, {
    run_id: Str, N, "The run.";
    device_index: Int, N, "GPU index.";
    metric: Str, N, "power.device_instant (W), temperature (°C), sm_util_pct, mem_used_bytes, mem_total_bytes, throttle_reasons.";
    t: Float, S, "Timestamp as the source wrote it (LEM v2 timestamp_s).";
    value: Float, N, "Value in the metric's unit.";
});

table!(LatencySampleRow, LatencySampleTable, LATENCY_SAMPLE_COLUMNS, {
    run_id: Str, N, "The run.";
    process_index: Int, N, "LEM process rank the sample came from.";
    kind: Str, N, "ttft, itl_raw (LEM itl_full_ms) or itl_trimmed.";
    seq: Int, N, "Order of the sample within its process and kind.";
    value_s: Float, S, "The sample.";
});

/// One series of latency samples: a run's process's samples of one kind, in seconds (its rows'
/// `seq` are 0, 1, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub run_id: Option<Text>,
    pub process_index: Option<i64>,
    pub kind: Text,
    pub values_s: Vec<f64>,
}

/// The latency sample table, kept as its series: a million samples are a few thousand series and
/// their values, not five columns of a million cells. It becomes rows only where rows are needed:
/// a frame (`serve --import`), or the slices an import writes ([`SampleColumns`]).
#[derive(Debug, Default)]
pub struct LatencySampleRows {
    series: Vec<Series>,
    len: usize,
}

impl LatencySampleRows {
    /// A series appended (the values move, they are not copied).
    pub fn push_series(&mut self, s: Series) {
        self.len += s.values_s.len();
        self.series.push(s);
    }

    /// Another table's series appended after these.
    pub fn append(&mut self, other: LatencySampleRows) {
        self.len += other.len;
        self.series.extend(other.series);
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The rows, column by column.
    fn into_table(self) -> LatencySampleTable {
        let mut t = LatencySampleTable::default();
        let n = self.len;
        let LatencySampleTable {
            len,
            run_id,
            process_index,
            kind,
            seq,
            value_s,
        } = &mut t;
        run_id.reserve(n);
        kind.reserve(n);
        process_index.reserve(n);
        seq.reserve(n);
        value_s.reserve(n);
        for s in &self.series {
            let k = s.values_s.len();
            run_id.put_n(s.run_id.clone(), k);
            kind.put_n(Some(s.kind.clone()), k);
            process_index.0.put_n(s.process_index, k);
            seq.0.extend((0..k).map(|i| i as i64));
            for &v in &s.values_s {
                value_s.put(Some(v));
            }
        }
        *len = n;
        t
    }

    /// The table as a frame with every column, in catalog order.
    pub fn into_frame(self) -> Frame {
        self.into_table().into_frame()
    }

    /// The table as a record batch with every column, in catalog order (text as dictionaries).
    pub fn into_batch(self) -> RecordBatch {
        self.into_table().into_batch()
    }

    /// The table for writing: rows of an earlier import (`kept`, a batch of this table's columns)
    /// first, then these series, each column's rows made on demand for the range asked for.
    pub fn into_columns(self, kept: Option<RecordBatch>) -> SampleColumns {
        let kept = kept.filter(|b| b.num_rows() > 0);
        let mut starts = Vec::with_capacity(self.series.len());
        let mut at = 0;
        // One dictionary cell per series: its key, and the dictionary of distinct values.
        let (mut runs, mut kinds) = (TextColumn::default(), TextColumn::default());
        for s in &self.series {
            starts.push(at);
            at += s.values_s.len();
            runs.put(s.run_id.clone());
            kinds.put(Some(s.kind.clone()));
        }
        let dictionary = |c: TextColumn| {
            let a = c.into_array();
            let d = a.as_dictionary::<Int32Type>();
            (d.keys().clone(), d.values().clone())
        };
        let ((run_keys, run_dict), (kind_keys, kind_dict)) = (dictionary(runs), dictionary(kinds));
        let kept_nulls = |c: usize| kept.as_ref().is_some_and(|b| b.column(c).null_count() > 0);
        let nullable = [
            kept_nulls(0) || run_keys.null_count() > 0,
            kept_nulls(1) || self.series.iter().any(|s| s.process_index.is_none()),
            kept_nulls(2),
            kept_nulls(3),
            kept_nulls(4)
                || self
                    .series
                    .iter()
                    .any(|s| s.values_s.iter().any(|v| !v.is_finite())),
        ];
        let dictionary = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let types = [
            dictionary.clone(),
            DataType::Int64,
            dictionary,
            DataType::Int64,
            DataType::Float64,
        ];
        let fields: Vec<Field> = LATENCY_SAMPLE_COLUMNS
            .iter()
            .zip(types)
            .zip(nullable)
            .map(|((c, t), n)| Field::new(c.name, t, n))
            .collect();
        SampleColumns {
            schema: Arc::new(Schema::new(fields)),
            kept_rows: kept.as_ref().map_or(0, RecordBatch::num_rows),
            kept,
            rows: at,
            series: self.series,
            starts,
            run_keys,
            kind_keys,
            run_dict,
            kind_dict,
        }
    }
}

/// The latency sample table being written ([`LatencySampleRows::into_columns`]).
pub struct SampleColumns {
    schema: SchemaRef,
    kept: Option<RecordBatch>,
    kept_rows: usize,
    /// Rows of the series (after the kept ones).
    rows: usize,
    series: Vec<Series>,
    /// Each series' first row, counted from the first series.
    starts: Vec<usize>,
    /// Each series' key into `run_dict` and `kind_dict`.
    run_keys: PrimitiveArray<Int32Type>,
    kind_keys: PrimitiveArray<Int32Type>,
    run_dict: ArrayRef,
    kind_dict: ArrayRef,
}

impl SampleColumns {
    /// (series, its first row taken, rows taken) for each series the rows `from..to` (counted
    /// from the first series) cross.
    fn parts(&self, from: usize, to: usize) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        let first = self
            .starts
            .partition_point(|&s| s <= from)
            .saturating_sub(1);
        (first..self.series.len())
            .take_while(move |&i| self.starts[i] < to)
            .map(move |i| {
                let start = self.starts[i];
                let lo = from.max(start) - start;
                let hi = to.min(start + self.series[i].values_s.len()) - start;
                (i, lo, hi - lo)
            })
    }

    /// The run (`c` 0), process (1) or kind (2) of each of the given series.
    fn per_series(&self, c: usize, series: &UInt32Array) -> ArrayRef {
        let take = |keys: &PrimitiveArray<Int32Type>| {
            arrow::compute::take(keys, series, None)
                .expect("series index the keys")
                .as_primitive::<Int32Type>()
                .clone()
        };
        match c {
            0 => dictionary(take(&self.run_keys), &self.run_dict),
            1 => Arc::new(PrimitiveArray::<Int64Type>::from_iter(
                series
                    .values()
                    .iter()
                    .map(|&i| self.series[i as usize].process_index),
            )),
            _ => dictionary(take(&self.kind_keys), &self.kind_dict),
        }
    }

    /// Column `c` of the series' rows `from..to` (counted from the first series).
    fn series_slice(&self, c: usize, from: usize, to: usize) -> ArrayRef {
        let n = to - from;
        let parts = self.parts(from, to);
        match c {
            0..=2 => {
                // Each row's series, and the column's value for it.
                let mut rows = Vec::with_capacity(n);
                for (i, _, k) in parts {
                    rows.extend(std::iter::repeat_n(i as u32, k));
                }
                self.per_series(c, &UInt32Array::from(rows))
            }
            3 => {
                let mut v = Vec::with_capacity(n);
                for (_, lo, k) in parts {
                    v.extend((lo..lo + k).map(|j| j as i64));
                }
                Arc::new(PrimitiveArray::<Int64Type>::from(v))
            }
            _ => {
                let mut v = Vec::with_capacity(n);
                for (i, lo, k) in parts {
                    v.extend_from_slice(&self.series[i].values_s[lo..lo + k]);
                }
                if v.iter().all(|x| x.is_finite()) {
                    Arc::new(PrimitiveArray::<Float64Type>::from(v))
                } else {
                    // As every float column keeps them: a non-finite value is null.
                    let a: PrimitiveArray<Float64Type> =
                        v.iter().map(|x| x.is_finite().then_some(*x)).collect();
                    Arc::new(a)
                }
            }
        }
    }
}

/// A text dictionary column of `keys` into `values`.
fn dictionary(keys: PrimitiveArray<Int32Type>, values: &ArrayRef) -> ArrayRef {
    Arc::new(
        DictionaryArray::<Int32Type>::try_new(keys, values.clone())
            .expect("keys index the dictionary"),
    )
}

impl Columns for SampleColumns {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn num_rows(&self) -> usize {
        self.kept_rows + self.rows
    }

    fn slice(&self, c: usize, offset: usize, len: usize) -> ArrayRef {
        let end = offset + len;
        let kept = self.kept.as_ref().map(|b| {
            let to = end.min(self.kept_rows);
            b.column(c).slice(offset.min(to), to - offset.min(to))
        });
        let ours = (end > self.kept_rows).then(|| {
            let from = offset.max(self.kept_rows) - self.kept_rows;
            self.series_slice(c, from, end - self.kept_rows)
        });
        match (kept, ours) {
            (Some(a), Some(b)) if !a.is_empty() => {
                arrow::compute::concat(&[a.as_ref(), b.as_ref()]).expect("one column type")
            }
            (_, Some(b)) => b,
            (Some(a), None) => a,
            (None, None) => arrow::array::new_empty_array(self.schema.field(c).data_type()),
        }
    }

    /// Measured latencies do not compress (snappy saved little of `value_s`'s bytes, and added
    /// much to the table's writing time).
    fn codec(&self, c: usize) -> Option<parquet::basic::Compression> {
        (self.schema.field(c).name() == "value_s")
            .then_some(parquet::basic::Compression::UNCOMPRESSED)
    }

    /// The run, process and kind of the series' rows are one value per series: run-end encoded,
    /// one run per series the range crosses (rows of kept series are made by `slice`).
    fn runs(&self, c: usize, offset: usize, len: usize) -> Option<ArrayRef> {
        if !(0..3).contains(&c) || offset < self.kept_rows || len == 0 {
            return None;
        }
        let from = offset - self.kept_rows;
        let (mut ends, mut at, mut taken) = (Vec::new(), 0i32, Vec::new());
        for (i, _, k) in self.parts(from, from + len).filter(|&(_, _, k)| k > 0) {
            at += i32::try_from(k).ok()?;
            ends.push(at);
            taken.push(i as u32);
        }
        if at as usize != len {
            return None;
        }
        let values = self.per_series(c, &UInt32Array::from(taken));
        let ends = PrimitiveArray::<Int32Type>::from(ends);
        Some(Arc::new(
            arrow::array::RunArray::<Int32Type>::try_new(&ends, &values).ok()?,
        ))
    }
}

table!(EvaluationRow, EvaluationRows, EVALUATION_COLUMNS, {
    run_id: Str, N, "The run.";
    evaluator: Str, N, "accuracy.json (ipw analyze), summary.json (IPW agentic) or rows (recomputed from the per-query records).";
    correct: Int, N, "Correct records.";
    incorrect: Int, N, "Incorrect records.";
    unevaluated: Int, N, "Records without a score.";
    failed: Int, N, "Records whose evaluation failed.";
    accuracy: Float, None, "correct / (correct + incorrect).";
    ipj_reported: Float, Some("1/J"), "The IPJ the source reported (agentic summaries divide by TOTAL energy, accuracy.json by the mean).";
    ipw_reported: Float, Some("1/W"), "The IPW the source reported.";
    ipj_norm: Float, Some("1/J"), "accuracy / mean per-query energy (with IPW's imputation of zero-energy records from power × latency).", "accuracy / mean(E_i)";
    ipw_norm: Float, Some("1/W"), "accuracy / mean per-query power.", "accuracy / mean(P_i)";
    energy_basis: Str, N, "gpu, soc or mixed.";
    imputed_count: Int, N, "Records whose energy was imputed as power × latency.";
});

table!(RepeatStatRow, RepeatStatRows, REPORTED_STATS_COLUMNS, {
    experiment_id: Str, N, "The experiment (`{source_id}~{LEM base id}`, as in runs).";
    source_id: Str, N, "Its source.";
    statistic: Str, N, "CycleStatistics field, e.g. energy_ci_95_lower.";
    value: Float, N, "As LEM reported it.";
});

/// Every table an import writes, with its file name and catalog.
pub const TABLES: &[(&str, &[Col])] = &[
    ("sources", SOURCE_COLUMNS),
    ("runs", RUN_COLUMNS),
    ("run_metrics", RUN_METRIC_COLUMNS),
    ("requests", REQUEST_COLUMNS),
    ("turns", TURN_COLUMNS),
    ("tool_calls", TOOL_CALL_COLUMNS),
    ("timeseries", TIMESERIES_COLUMNS),
    ("latency_samples", LATENCY_SAMPLE_COLUMNS),
    ("evaluations", EVALUATION_COLUMNS),
    ("reported_stats", REPORTED_STATS_COLUMNS),
];

/// Tables served as lists under `/v1/measurements/{table}` (the run table has routes of its own).
pub const LIST_TABLES: &[&str] = &[
    "sources",
    "requests",
    "turns",
    "tool_calls",
    "timeseries",
    "latency_samples",
    "evaluations",
    "run_metrics",
    "reported_stats",
];

/// The catalog of a table by name.
pub fn columns(table: &str) -> Option<&'static [Col]> {
    TABLES.iter().find(|(n, _)| *n == table).map(|(_, c)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use mlenergy_engine::arrow_conv::dictionary_texts;

    fn sample(run: &Text, kind: &Text, seq: i64, v: Option<f64>) -> LatencySampleRow {
        LatencySampleRow {
            run_id: Some(run.clone()),
            process_index: Some(0),
            kind: Some(kind.clone()),
            seq: Some(seq),
            value_s: v,
        }
    }

    /// The Arrow columns and the frame columns of one table hold the same cells: text once per
    /// distinct value (equal text from different allocations shares a key), nulls where a cell is
    /// absent, and non-finite floats as nulls.
    #[test]
    fn arrow_columns_and_frames_agree() {
        let (a, b, a_again): (Text, Text, Text) = ("run-a".into(), "run-b".into(), "run-a".into());
        let ttft: Text = "ttft".into();
        let rows = vec![
            sample(&a, &ttft, 0, Some(0.5)),
            sample(&a, &ttft, 1, Some(f64::NAN)),
            sample(&b, &ttft, 0, None),
            sample(&a_again, &ttft, 2, Some(1.25)),
            LatencySampleRow::default(),
        ];
        let frame = LatencySampleTable::from(rows.clone()).into_frame();
        let batch = LatencySampleTable::from(rows).into_batch();
        assert_eq!(batch.num_rows(), 5);
        let run = batch.column(0).as_dictionary::<Int32Type>();
        assert_eq!(run.values().len(), 2, "run-a is stored once");
        let keys: Vec<Option<i32>> = run.keys().iter().collect();
        assert_eq!(keys, [Some(0), Some(0), Some(1), Some(0), None]);
        assert!(batch.schema().field(0).is_nullable());
        let values = batch.column(4).as_primitive::<Float64Type>();
        let values: Vec<Option<f64>> = values.iter().collect();
        assert_eq!(values, [Some(0.5), None, None, Some(1.25), None]);
        match &frame.column("run_id").expect("run_id").data {
            ColumnData::Str(v) => {
                let v: Vec<Option<&str>> = v.iter().map(|s| s.as_deref()).collect();
                assert_eq!(
                    v,
                    [
                        Some("run-a"),
                        Some("run-a"),
                        Some("run-b"),
                        Some("run-a"),
                        None
                    ]
                );
            }
            other => panic!("run_id is {other:?}"),
        }
        assert_eq!(
            frame.column("value_s").expect("value_s").data,
            ColumnData::Float(vec![Some(0.5), None, None, Some(1.25), None])
        );
        assert_eq!(
            frame.column("seq").expect("seq").data,
            ColumnData::Int(vec![Some(0), Some(1), Some(0), Some(2), None])
        );
    }

    /// A table appended to another holds the rows of both, in order: text (a value in both,
    /// a null, a value in one only), numbers and their nulls, JSON cells.
    #[test]
    fn appended_tables_hold_both_tables_rows() {
        let (a, b, c): (Text, Text, Text) = ("run-a".into(), "run-b".into(), "run-c".into());
        let row = |run: Option<&Text>, m: &str, v: Option<f64>| RunMetricRow {
            run_id: run.cloned(),
            metric: Some(m.into()),
            value: v,
            unit: None,
            source_field: Some(format!("{m}.field").into()),
        };
        let first = vec![row(Some(&a), "x", Some(1.0)), row(None, "y", None)];
        let second = vec![
            row(Some(&b), "x", None),
            row(Some(&a), "z", Some(2.5)),
            row(Some(&c), "x", Some(f64::INFINITY)),
        ];
        let mut appended = RunMetricRows::from(first.clone());
        appended.append(RunMetricRows::from(second.clone()));
        assert_eq!(appended.len(), 5);
        let all: Vec<RunMetricRow> = first.into_iter().chain(second).collect();
        assert_eq!(
            appended.into_frame(),
            RunMetricRows::from(all.clone()).into_frame()
        );
        // And the batches hold the same cells (the appended dictionary may repeat a value).
        let mut appended = RunMetricRows::from(all[..2].to_vec());
        appended.append(RunMetricRows::from(all[2..].to_vec()));
        let text = |b: &RecordBatch, c: usize| dictionary_texts(b.column(c));
        let (x, y) = (appended.into_batch(), RunMetricRows::from(all).into_batch());
        for c in [0, 1, 3, 4] {
            assert_eq!(text(&x, c), text(&y, c), "column {c}");
        }
        assert_eq!(x.column(2).as_ref(), y.column(2).as_ref());
    }

    fn some_series() -> LatencySampleRows {
        let (a, b): (Text, Text) = ("run-a".into(), "run-b".into());
        let mut t = LatencySampleRows::default();
        let mut push = |run_id: Option<&Text>, pi, kind: &str, values_s: Vec<f64>| {
            t.push_series(Series {
                run_id: run_id.cloned(),
                process_index: pi,
                kind: kind.into(),
                values_s,
            })
        };
        push(Some(&a), Some(0), "ttft", vec![0.1, 0.2, 0.3]);
        push(Some(&a), Some(0), "itl_raw", vec![]);
        push(Some(&a), Some(1), "ttft", vec![0.4, f64::NAN]);
        push(None, None, "itl_trimmed", vec![0.5]);
        push(Some(&b), Some(0), "ttft", (0..7).map(f64::from).collect());
        t
    }

    /// The series' columns made for any range equal the rows the series expand to, kept rows of
    /// an earlier import first (ranges within either part and across them).
    #[test]
    fn sample_columns_slice_as_the_rows_they_stand_for() {
        let rows = some_series().into_batch();
        assert_eq!(rows.num_rows(), 13);
        let kept = rows.slice(2, 4);
        let whole = arrow::compute::concat_batches(&rows.schema(), &[kept.clone(), rows.clone()])
            .expect("one schema");
        for (cols, want) in [
            (some_series().into_columns(None), &rows),
            (some_series().into_columns(Some(kept)), &whole),
        ] {
            assert_eq!(cols.num_rows(), want.num_rows());
            assert_eq!(cols.schema(), want.schema(), "types and nullability");
            for c in 0..5 {
                for from in 0..want.num_rows() {
                    for to in from..=want.num_rows() {
                        let got = cols.slice(c, from, to - from);
                        let expected = want.column(c).slice(from, to - from);
                        // Dictionaries may number their values differently: compare the text.
                        let plain = |a: &ArrayRef| {
                            arrow::compute::cast(a, &arrow::datatypes::DataType::Utf8)
                                .unwrap_or_else(|_| a.clone())
                        };
                        assert_eq!(
                            plain(&got).as_ref(),
                            plain(&expected).as_ref(),
                            "column {c}, rows {from}..{to}"
                        );
                        // The run, process and kind of new series' rows are also offered as
                        // runs, which expand to the same rows.
                        let runs = cols.runs(c, from, to - from);
                        let new_rows = from >= cols.num_rows() - rows.num_rows() && to > from;
                        assert_eq!(
                            runs.is_some(),
                            c < 3 && new_rows,
                            "column {c}, {from}..{to}"
                        );
                        if let Some(runs) = runs {
                            let r = runs.as_run::<Int32Type>();
                            let mut at = 0;
                            let mut take = Vec::new();
                            for (i, end) in r.run_ends().values().iter().enumerate() {
                                take.extend(std::iter::repeat_n(i as u32, *end as usize - at));
                                at = *end as usize;
                            }
                            let take = arrow::array::UInt32Array::from(take);
                            let rows = arrow::compute::take(r.values(), &take, None).unwrap();
                            assert_eq!(
                                plain(&rows).as_ref(),
                                plain(&expected).as_ref(),
                                "runs of column {c}, rows {from}..{to}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// A column without nulls is marked required; JSON columns carry the `arrow.json` type.
    #[test]
    fn fields_say_nullability_and_json() {
        let batch = RunMetricRows::from(vec![RunMetricRow {
            run_id: Some("r".into()),
            metric: Some("m".into()),
            value: Some(1.0),
            unit: None,
            source_field: Some("f".into()),
        }])
        .into_batch();
        let schema = batch.schema();
        assert!(
            !schema
                .field_with_name("run_id")
                .expect("run_id")
                .is_nullable()
        );
        assert!(schema.field_with_name("unit").expect("unit").is_nullable());
        let runs = RunRows::from(vec![RunRow::default()]).into_batch();
        let warnings = runs
            .schema()
            .field_with_name("warnings")
            .expect("warnings")
            .clone();
        assert_eq!(
            warnings
                .metadata()
                .get("ARROW:extension:name")
                .map(String::as_str),
            Some("arrow.json")
        );
    }
}
