//! What one SQL query may build, bounded by construction on every surface (HTTP, the PostgreSQL
//! wire, Flight SQL, MCP all plan through a context this module confines).
//!
//! DataFusion's memory pool counts what operators buffer (sorts, joins, aggregates), not what a
//! function allocates for the values it returns, and the time limit is looked at between batches:
//! one `repeat('x', 2000000000)` allocated gigabytes outside the pool in a single call. So:
//!
//! - **An allow-list** ([`SCALARS`], [`AGGREGATES`], [`WINDOWS`], [`TABLES`]): a context keeps
//!   only the functions named there, each reviewed for how its output grows with its arguments
//!   ([`Growth`]). A function a DataFusion upgrade adds is not callable until it is classified.
//!   The check runs on the analysed plan too ([`BoundsRule`]), since the SQL planner builds some
//!   calls (`[1, 2]`, `x[1]`, `SUBSTRING`, `EXTRACT`) from DataFusion's own instances, not the
//!   registry.
//! - **Sizes checked before the call** ([`Guarded`]): every allowed scalar function runs through a
//!   wrapper that estimates the bytes its output can take from its arguments (their sizes, and
//!   for `repeat`, `lpad`, `range`, `array_repeat`... the counts they hold), and refuses the call
//!   when one value would exceed [`ValueBounds::value_bytes`] or the call's whole output
//!   [`ValueBounds::call_bytes`]. What it returned is checked against the same bounds, so nesting
//!   cannot compound. `||` on strings becomes a guarded call too ([`StringConcat`]); `array_agg`
//!   and `string_agg` have their values checked ([`GuardedAggregate`]).
//! - **Constants** in a plan are at most [`ValueBounds::value_bytes`] (a long literal in the text,
//!   or a call folded at planning), since an operator copies a constant into every row of a batch.
//!
//! With values bounded and a context's batches at most [`SQL_BATCH_ROWS`] rows, a batch of one
//! column is at most `value_bytes * SQL_BATCH_ROWS` bytes, whatever joins or unnesting made it.
//! Used by `engine::sql::sql_context`; imports DataFusion only.

use std::any::Any;
#[cfg(test)]
use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::arrow::array::BooleanArray;
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, FieldRef, Int64Type};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::expr::{
    AggregateFunction, AggregateFunctionParams, ScalarFunction, WindowFunction,
    WindowFunctionParams,
};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::udf_eq::UdfEq;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, BinaryExpr, ColumnarValue, Documentation, Expr,
    ExprSchemable, LogicalPlan, Operator, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility, WindowFunctionDefinition,
};
use datafusion::logical_expr::{EmitTo, GroupsAccumulator, ReversedUDAF, SetMonotonicity};
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::SessionContext;

/// Rows of one batch in a SQL context (DataFusion's default is 8192): with every value bounded,
/// this bounds a batch's bytes.
pub const SQL_BATCH_ROWS: usize = 1024;

/// Bytes of one regular-expression pattern (`regexp_*`): a pattern is compiled per distinct
/// value, and compiling takes time with its length.
pub const PATTERN_BYTES: usize = 1024;

/// The bounds on what a query's functions build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ValueBounds {
    /// The most bytes one value (a string, a binary, a list, a map, a struct) may hold.
    pub value_bytes: usize,
    /// The most bytes one call's output over a batch may hold.
    pub call_bytes: usize,
}

impl ValueBounds {
    /// Values of at most `value_bytes`, and a call's output of at most two batches of them.
    pub fn of_value(value_bytes: usize) -> ValueBounds {
        ValueBounds {
            value_bytes,
            call_bytes: value_bytes.saturating_mul(2 * SQL_BATCH_ROWS),
        }
    }
}

impl Default for ValueBounds {
    fn default() -> Self {
        ValueBounds::of_value(16 << 10)
    }
}

/// The word every refusal of this module starts with (`engine::sql::classify` reads it).
pub const VALUE_LIMIT: &str = "value limit";

/// How a function's output can grow with its arguments; the estimate [`Guarded`] checks before
/// calling it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Growth {
    /// At most `k` times the bytes of its arguments (fixed-width answers included).
    Linear(u8),
    /// `repeat(s, n)`: `n` copies of `s`.
    Repeat,
    /// `lpad(s, n[, fill])`, `rpad`: `n` characters.
    Pad,
    /// `array_repeat(e, n)`: `n` copies of `e`.
    ArrayRepeat,
    /// `range`, `generate_series` as scalar functions: a list of `(stop - start) / step` items.
    Series,
    /// `array_resize(a, n[, v])`: `n` items.
    Resize,
    /// `replace(s, from, to)`: every `from` in `s` becomes `to`.
    Replace,
    /// `regexp_replace(s, pattern, replacement[, flags])`: every match becomes the replacement,
    /// whose group references each copy up to all of `s`.
    RegexpReplace,
    /// `concat_ws(sep, a, b, ...)`: the separator between each pair.
    Separated,
    /// `array_to_string(list, delimiter[, null])`: each item as text and a delimiter.
    ListToString,
    /// A regular-expression function: its pattern (argument `arg`) at most [`PATTERN_BYTES`], the
    /// output at most `k` times its arguments, or one copy of the text per group for `groups`.
    Pattern { arg: u8, k: u8, groups: bool },
}

/// The scalar functions a query may call, with how each output grows.
pub const SCALARS: &[(&str, Growth)] = {
    use Growth::*;
    &[
        // Numbers: fixed-width answers.
        ("abs", Linear(1)),
        ("acos", Linear(1)),
        ("acosh", Linear(1)),
        ("asin", Linear(1)),
        ("asinh", Linear(1)),
        ("atan", Linear(1)),
        ("atan2", Linear(1)),
        ("atanh", Linear(1)),
        ("cbrt", Linear(1)),
        ("ceil", Linear(1)),
        ("cos", Linear(1)),
        ("cosh", Linear(1)),
        ("cot", Linear(1)),
        ("degrees", Linear(1)),
        ("exp", Linear(1)),
        ("factorial", Linear(1)),
        ("floor", Linear(1)),
        ("gcd", Linear(1)),
        ("isnan", Linear(1)),
        ("iszero", Linear(1)),
        ("lcm", Linear(1)),
        ("ln", Linear(1)),
        ("log", Linear(1)),
        ("log10", Linear(1)),
        ("log2", Linear(1)),
        ("nanvl", Linear(1)),
        ("pi", Linear(1)),
        ("power", Linear(1)),
        ("radians", Linear(1)),
        ("random", Linear(1)),
        ("round", Linear(1)),
        ("signum", Linear(1)),
        ("sin", Linear(1)),
        ("sinh", Linear(1)),
        ("sqrt", Linear(1)),
        ("tan", Linear(1)),
        ("tanh", Linear(1)),
        ("trunc", Linear(1)),
        // Conditionals, casts and types: one of their arguments, or its text.
        ("coalesce", Linear(1)),
        ("greatest", Linear(1)),
        ("least", Linear(1)),
        ("nullif", Linear(1)),
        ("nvl", Linear(1)),
        ("nvl2", Linear(1)),
        ("arrow_cast", Linear(4)),
        ("arrow_typeof", Linear(2)),
        ("get_field", Linear(1)),
        ("named_struct", Linear(2)),
        ("struct", Linear(2)),
        // Strings that keep or shrink their text (case changes can triple a character's bytes).
        ("ascii", Linear(1)),
        ("bit_length", Linear(1)),
        ("btrim", Linear(1)),
        ("character_length", Linear(1)),
        ("chr", Linear(1)),
        ("concat", Linear(1)),
        ("contains", Linear(1)),
        ("ends_with", Linear(1)),
        ("find_in_set", Linear(1)),
        ("initcap", Linear(3)),
        ("left", Linear(1)),
        ("lower", Linear(3)),
        ("ltrim", Linear(1)),
        ("octet_length", Linear(1)),
        ("overlay", Linear(1)),
        ("reverse", Linear(1)),
        ("right", Linear(1)),
        ("rtrim", Linear(1)),
        ("split_part", Linear(1)),
        ("starts_with", Linear(1)),
        ("strpos", Linear(1)),
        ("substr", Linear(1)),
        ("substr_index", Linear(1)),
        ("translate", Linear(4)),
        ("upper", Linear(3)),
        ("uuid", Linear(1)),
        ("to_hex", Linear(3)),
        ("encode", Linear(2)),
        ("decode", Linear(1)),
        ("md5", Linear(1)),
        ("sha224", Linear(1)),
        ("sha256", Linear(1)),
        ("sha384", Linear(1)),
        ("sha512", Linear(1)),
        ("digest", Linear(1)),
        ("string_to_array", Linear(10)),
        // Strings that build from a count or a replacement.
        ("repeat", Repeat),
        ("lpad", Pad),
        ("rpad", Pad),
        ("replace", Replace),
        ("concat_ws", Separated),
        ("regexp_replace", RegexpReplace),
        (
            "regexp_like",
            Pattern {
                arg: 1,
                k: 1,
                groups: false,
            },
        ),
        (
            "regexp_count",
            Pattern {
                arg: 1,
                k: 1,
                groups: false,
            },
        ),
        (
            "regexp_instr",
            Pattern {
                arg: 1,
                k: 1,
                groups: false,
            },
        ),
        (
            "regexp_match",
            Pattern {
                arg: 1,
                k: 2,
                groups: true,
            },
        ),
        // Dates and times: fixed-width answers, or text as long as a format.
        ("current_date", Linear(1)),
        ("current_time", Linear(1)),
        ("now", Linear(1)),
        ("date_bin", Linear(1)),
        ("date_part", Linear(1)),
        ("date_trunc", Linear(1)),
        ("from_unixtime", Linear(1)),
        ("make_date", Linear(1)),
        ("to_char", Linear(16)),
        ("to_date", Linear(1)),
        ("to_local_time", Linear(1)),
        ("to_timestamp", Linear(1)),
        ("to_timestamp_micros", Linear(1)),
        ("to_timestamp_millis", Linear(1)),
        ("to_timestamp_nanos", Linear(1)),
        ("to_timestamp_seconds", Linear(1)),
        ("to_unixtime", Linear(1)),
        // Lists and maps: their items, with offsets.
        ("array_any_value", Linear(1)),
        ("array_append", Linear(2)),
        ("array_concat", Linear(2)),
        ("array_dims", Linear(2)),
        ("array_distinct", Linear(2)),
        ("array_element", Linear(1)),
        ("array_empty", Linear(1)),
        ("array_except", Linear(2)),
        ("array_has", Linear(1)),
        ("array_intersect", Linear(2)),
        ("array_length", Linear(1)),
        ("array_max", Linear(1)),
        ("array_min", Linear(1)),
        ("array_ndims", Linear(1)),
        ("array_pop_back", Linear(2)),
        ("array_pop_front", Linear(2)),
        ("array_position", Linear(1)),
        ("array_positions", Linear(2)),
        ("array_prepend", Linear(2)),
        ("array_remove", Linear(2)),
        ("array_remove_all", Linear(2)),
        ("array_remove_n", Linear(2)),
        ("array_reverse", Linear(2)),
        ("array_slice", Linear(2)),
        ("array_sort", Linear(2)),
        ("array_union", Linear(2)),
        ("cardinality", Linear(1)),
        ("flatten", Linear(2)),
        ("make_array", Linear(2)),
        ("map", Linear(2)),
        ("map_entries", Linear(2)),
        ("map_extract", Linear(2)),
        ("map_keys", Linear(2)),
        ("map_values", Linear(2)),
        ("array_repeat", ArrayRepeat),
        ("array_resize", Resize),
        ("range", Series),
        ("generate_series", Series),
        ("array_to_string", ListToString),
        // The PostgreSQL wire's catalog functions (pg::catalog): names, flags and small texts.
        ("col_description", Linear(1)),
        ("current_database", Linear(1)),
        ("current_schema", Linear(1)),
        ("current_schemas", Linear(2)),
        ("current_user", Linear(1)),
        ("format_type", Linear(2)),
        ("has_any_column_privilege", Linear(1)),
        ("has_database_privilege", Linear(1)),
        ("has_schema_privilege", Linear(1)),
        ("has_table_privilege", Linear(1)),
        ("json_build_object", Linear(6)),
        ("obj_description", Linear(1)),
        ("pg_backend_pid", Linear(1)),
        ("pg_encoding_to_char", Linear(1)),
        ("pg_get_constraintdef", Linear(1)),
        ("pg_get_expr", Linear(2)),
        ("pg_get_partition_ancestors", Linear(2)),
        ("pg_get_statisticsobjdef_columns", Linear(1)),
        ("pg_stat_get_numscans", Linear(1)),
        ("quote_ident", Linear(3)),
        ("parse_ident", Linear(2)),
        ("array_upper", Linear(1)),
        ("array_lower", Linear(1)),
        ("pg_get_indexdef", Linear(1)),
        ("pg_get_partkeydef", Linear(1)),
        ("pg_get_userbyid", Linear(1)),
        ("pg_get_viewdef", Linear(1)),
        ("pg_postmaster_start_time", Linear(1)),
        ("pg_relation_is_publishable", Linear(1)),
        ("pg_relation_size", Linear(1)),
        ("pg_table_is_visible", Linear(1)),
        ("pg_total_relation_size", Linear(1)),
        ("session_user", Linear(1)),
        ("to_regtype", Linear(1)),
        ("version", Linear(1)),
    ]
};

/// The aggregate functions a query may call; those building a value of their rows (`array_agg`,
/// `string_agg`) have it checked against the value bound ([`BUILDERS`]). The others answer a
/// number, or one of their values.
pub const AGGREGATES: &[&str] = &[
    "approx_distinct",
    "approx_median",
    "approx_percentile_cont",
    "approx_percentile_cont_with_weight",
    "array_agg",
    "avg",
    "bit_and",
    "bit_or",
    "bit_xor",
    "bool_and",
    "bool_or",
    "corr",
    "count",
    "covar_pop",
    "covar_samp",
    "first_value",
    "grouping",
    "last_value",
    "logistic_fit",
    "max",
    "median",
    "min",
    "nth_value",
    "percentile_cont",
    "regr_avgx",
    "regr_avgy",
    "regr_count",
    "regr_intercept",
    "regr_r2",
    "regr_slope",
    "regr_sxx",
    "regr_sxy",
    "regr_syy",
    "stddev",
    "stddev_pop",
    "string_agg",
    "sum",
    "var",
    "var_pop",
];

/// The aggregates whose value is built of their rows.
pub const BUILDERS: &[&str] = &["array_agg", "string_agg"];

/// The window functions a query may call: ranks and one row's value.
pub const WINDOWS: &[&str] = &[
    "cume_dist",
    "dense_rank",
    "first_value",
    "lag",
    "last_value",
    "lead",
    "nth_value",
    "ntile",
    "percent_rank",
    "rank",
    "row_number",
];

/// The table functions a query may call: rows of numbers or times, made a batch at a time (the
/// time limit bounds how many), and the PostgreSQL wire's fixed list of keywords.
pub const TABLES: &[&str] = &["generate_series", "range", "pg_get_keywords"];

/// How `name`'s output grows, when a query may call it.
pub fn growth_of(name: &str) -> Option<Growth> {
    SCALARS.iter().find(|(n, _)| *n == name).map(|(_, g)| *g)
}

fn allowed_aggregate(name: &str) -> bool {
    AGGREGATES.contains(&name)
}

/// Keep only the allowed functions in `ctx` (each scalar one guarded, the building aggregates
/// checked), and check every plan it makes ([`BoundsRule`]). Run after everything else has
/// registered its functions (a surface's setup included).
pub fn confine(ctx: &SessionContext, bounds: ValueBounds) {
    let state = ctx.state();
    for (name, udf) in state.scalar_functions() {
        if name != udf.name() {
            continue; // an alias: its function is handled under its own name
        }
        match growth_of(name) {
            Some(growth) => {
                ctx.register_udf(Guarded::wrap(udf.clone(), growth, bounds));
            }
            None => ctx.deregister_udf(name),
        }
    }
    for (name, udaf) in state.aggregate_functions() {
        if name != udaf.name() {
            continue;
        }
        if !allowed_aggregate(name) {
            ctx.deregister_udaf(name);
        } else if BUILDERS.contains(&name.as_str()) {
            ctx.register_udaf(GuardedAggregate::wrap(udaf.clone(), bounds));
        }
    }
    for (name, udwf) in state.window_functions() {
        if name == udwf.name() && !WINDOWS.contains(&name.as_str()) {
            ctx.deregister_udwf(name);
        }
    }
    for name in state.table_functions().keys() {
        if !TABLES.contains(&name.as_str()) {
            ctx.deregister_udtf(name);
        }
    }
    // The registrations above removed some names from the aliases' map: drop any alias left
    // pointing at a removed function.
    let state = ctx.state();
    for (name, udf) in state.scalar_functions() {
        if growth_of(udf.name()).is_none() {
            ctx.deregister_udf(name);
        }
    }
    for (name, udaf) in state.aggregate_functions() {
        if !allowed_aggregate(udaf.name()) {
            ctx.deregister_udaf(name);
        }
    }
    ctx.add_analyzer_rule(Arc::new(BoundsRule { bounds }));
}

/// The answer of a call refused by a bound.
fn refused(what: String) -> DataFusionError {
    DataFusionError::ResourcesExhausted(format!("{VALUE_LIMIT}: {what}"))
}

/// Why `name` may not be called.
pub fn not_allowed(kind: &str, name: &str) -> DataFusionError {
    DataFusionError::Plan(format!(
        "the {kind} function '{name}' may not be called on this server; GET /v1/sql/functions \
         lists those that may"
    ))
}

// ---------------------------------------------------------------------------------------------
// Sizes of arguments and answers.

/// Bytes of one value of a scalar (its payload, not the enum around it).
pub fn scalar_bytes(s: &ScalarValue) -> usize {
    match s {
        ScalarValue::Utf8(v) | ScalarValue::LargeUtf8(v) | ScalarValue::Utf8View(v) => {
            v.as_ref().map_or(0, String::len)
        }
        ScalarValue::Binary(v) | ScalarValue::LargeBinary(v) | ScalarValue::BinaryView(v) => {
            v.as_ref().map_or(0, Vec::len)
        }
        ScalarValue::FixedSizeBinary(_, v) => v.as_ref().map_or(0, Vec::len),
        s => match s.data_type().primitive_width() {
            Some(w) => w,
            None => s.size().saturating_sub(std::mem::size_of::<ScalarValue>()),
        },
    }
}

/// Bytes an argument takes over `rows` rows (a scalar counted once a row: the answer is made per
/// row).
fn arg_bytes(v: &ColumnarValue, rows: usize) -> usize {
    match v {
        ColumnarValue::Array(a) => array_bytes(a.as_ref()),
        ColumnarValue::Scalar(s) => scalar_bytes(s).saturating_mul(rows.max(1)),
    }
}

/// Bytes of an array's own rows (a slice counts its part of the buffers).
fn array_bytes(a: &dyn Array) -> usize {
    a.to_data()
        .get_slice_memory_size()
        .unwrap_or_else(|_| a.get_array_memory_size())
}

/// Each row's bytes of a string, binary or list argument (other types: their width).
fn value_lengths(v: &ColumnarValue, rows: usize) -> Vec<usize> {
    match v {
        ColumnarValue::Scalar(s) => vec![scalar_bytes(s); rows.max(1)],
        ColumnarValue::Array(a) => (0..a.len()).map(|i| value_length(a.as_ref(), i)).collect(),
    }
}

/// Bytes of row `i` of `a` (0 for a null).
fn value_length(a: &dyn Array, i: usize) -> usize {
    if a.is_null(i) {
        return 0;
    }
    match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().value_length(i) as usize,
        DataType::LargeUtf8 => a.as_string::<i64>().value_length(i) as usize,
        DataType::Utf8View => a.as_string_view().value(i).len(),
        DataType::Binary => a.as_binary::<i32>().value_length(i) as usize,
        DataType::LargeBinary => a.as_binary::<i64>().value_length(i) as usize,
        DataType::BinaryView => a.as_binary_view().value(i).len(),
        DataType::List(_) => array_bytes(a.as_list::<i32>().value(i).as_ref()),
        DataType::LargeList(_) => array_bytes(a.as_list::<i64>().value(i).as_ref()),
        DataType::FixedSizeList(..) => array_bytes(a.as_fixed_size_list().value(i).as_ref()),
        DataType::Map(..) => array_bytes(&a.as_map().value(i)),
        DataType::Struct(_) => array_bytes(a.slice(i, 1).as_ref()),
        d => d.primitive_width().unwrap_or(8),
    }
}

/// Each row's value of an integer argument (a null or a value that does not convert: 0).
fn counts(v: &ColumnarValue, rows: usize) -> Vec<i64> {
    let one = |s: &ScalarValue| match s.cast_to(&DataType::Int64) {
        Ok(ScalarValue::Int64(Some(n))) => n,
        _ => 0,
    };
    match v {
        ColumnarValue::Scalar(s) => vec![one(s); rows.max(1)],
        ColumnarValue::Array(a) => match datafusion::arrow::compute::cast(a, &DataType::Int64) {
            Ok(ints) => {
                let ints = ints.as_primitive::<Int64Type>();
                (0..ints.len())
                    .map(|i| if ints.is_null(i) { 0 } else { ints.value(i) })
                    .collect()
            }
            Err(_) => vec![0; a.len()],
        },
    }
}

/// Row `i` of a per-row list (a scalar's list has one row for every row).
fn at<T: Copy + Default>(v: &[T], i: usize) -> T {
    match v.len() {
        0 => T::default(),
        1 => v[0],
        _ => v.get(i).copied().unwrap_or_default(),
    }
}

/// Texts of a string argument's rows, for the patterns and replacements read whole.
fn texts(v: &ColumnarValue) -> Vec<Option<String>> {
    match v {
        ColumnarValue::Scalar(s) => match s.cast_to(&DataType::Utf8) {
            Ok(ScalarValue::Utf8(t)) => vec![t],
            _ => vec![None],
        },
        ColumnarValue::Array(a) => match datafusion::arrow::compute::cast(a, &DataType::Utf8) {
            Ok(t) => {
                let t = t.as_string::<i32>();
                (0..t.len())
                    .map(|i| (!t.is_null(i)).then(|| t.value(i).to_owned()))
                    .collect()
            }
            Err(_) => vec![None],
        },
    }
}

/// Items of a list between `start` and `stop` by `step` (as `range`), for numbers, dates and
/// times; 0 when they are not of those kinds or do not advance.
fn series_len(start: &ScalarValue, stop: &ScalarValue, step: Option<&ScalarValue>) -> u128 {
    let as_ns = |s: &ScalarValue| -> Option<i128> {
        match s.data_type() {
            d if d.is_integer() => match s.cast_to(&DataType::Int64).ok()? {
                ScalarValue::Int64(Some(n)) => Some(n as i128),
                _ => None,
            },
            DataType::Date32 | DataType::Date64 | DataType::Timestamp(..) => {
                let ts =
                    DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Nanosecond, None);
                match s.cast_to(&ts).ok()? {
                    ScalarValue::TimestampNanosecond(Some(n), _) => Some(n as i128),
                    _ => None,
                }
            }
            _ => None,
        }
    };
    let (Some(a), Some(b)) = (as_ns(start), as_ns(stop)) else {
        return 0;
    };
    let step: i128 = match step {
        None => 1,
        Some(ScalarValue::IntervalMonthDayNano(Some(v))) => {
            // A month is at least 28 days: the most items a month's step can make.
            v.months as i128 * 28 * 86_400_000_000_000
                + v.days as i128 * 86_400_000_000_000
                + v.nanoseconds as i128
        }
        Some(ScalarValue::IntervalDayTime(Some(v))) => {
            v.days as i128 * 86_400_000_000_000 + v.milliseconds as i128 * 1_000_000
        }
        Some(ScalarValue::IntervalYearMonth(Some(m))) => *m as i128 * 28 * 86_400_000_000_000,
        Some(s) => match s.cast_to(&DataType::Int64) {
            Ok(ScalarValue::Int64(Some(n))) => n as i128,
            _ => return 0,
        },
    };
    if step == 0 || (b - a).signum() * step.signum() < 0 {
        return 0;
    }
    ((b - a) / step).unsigned_abs() + 1
}

/// Items of row `i` of `range(stop)`, `range(start, stop)` or `range(start, stop, step)`.
fn series_items(args: &[ColumnarValue], i: usize) -> u128 {
    let get = |k: usize| args.get(k).and_then(|a| scalar_at(a, i));
    match args.len() {
        1 => get(0).map_or(0, |stop| {
            series_len(&ScalarValue::Int64(Some(0)), &stop, None)
        }),
        2 => match (get(0), get(1)) {
            (Some(a), Some(b)) => series_len(&a, &b, None),
            _ => 0,
        },
        _ => match (get(0), get(1), get(2)) {
            (Some(a), Some(b), Some(s)) => series_len(&a, &b, Some(&s)),
            _ => 0,
        },
    }
}

/// Row `i` of an argument as a scalar (a scalar argument is every row's).
fn scalar_at(v: &ColumnarValue, i: usize) -> Option<ScalarValue> {
    match v {
        ColumnarValue::Scalar(s) => Some(s.clone()),
        ColumnarValue::Array(a) => ScalarValue::try_from_array(a, i).ok(),
    }
}

/// What a call of `growth` over `args` (`rows` rows) may build: the bytes of its largest value
/// (when it can be told from the arguments) and of its whole output.
fn estimate(growth: Growth, args: &[ColumnarValue], rows: usize) -> Result<(u128, u128)> {
    let total_in: u128 = args.iter().map(|a| arg_bytes(a, rows) as u128).sum();
    let arg = |i: usize| args.get(i);
    let per_row = |each: &dyn Fn(usize) -> u128| -> (u128, u128) {
        let n = if args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_))) {
            1
        } else {
            rows.max(1)
        };
        let (mut max, mut sum) = (0u128, 0u128);
        for i in 0..n {
            let b = each(i);
            max = max.max(b);
            sum = sum.saturating_add(b);
        }
        // A scalar answer is copied into every row by the operator using it.
        (max, sum.saturating_mul((rows.max(1) / n) as u128))
    };
    Ok(match growth {
        Growth::Linear(k) => (0, total_in * k as u128),
        Growth::Repeat => {
            let (Some(s), Some(n)) = (arg(0), arg(1)) else {
                return Ok((0, total_in));
            };
            let (lens, ns) = (value_lengths(s, rows), counts(n, rows));
            per_row(&|i| at(&lens, i) as u128 * at(&ns, i).max(0) as u128)
        }
        Growth::Pad => {
            let Some(n) = arg(1) else {
                return Ok((0, total_in));
            };
            let ns = counts(n, rows);
            // Up to four bytes a character.
            per_row(&|i| at(&ns, i).max(0) as u128 * 4)
        }
        Growth::ArrayRepeat => {
            let (Some(e), Some(n)) = (arg(0), arg(1)) else {
                return Ok((0, total_in));
            };
            let (lens, ns) = (value_lengths(e, rows), counts(n, rows));
            // Each copy is the item and its offset or validity.
            per_row(&|i| (at(&lens, i) as u128 + 8) * at(&ns, i).max(0) as u128)
        }
        Growth::Series => per_row(&|i| series_items(args, i).saturating_mul(8)),
        Growth::Resize => {
            let Some(n) = arg(1) else {
                return Ok((0, total_in));
            };
            let ns = counts(n, rows);
            let lens = arg(0).map(|a| value_lengths(a, rows)).unwrap_or_default();
            let fill = arg(2).map(|a| value_lengths(a, rows)).unwrap_or_default();
            per_row(&|i| {
                at(&lens, i) as u128 + at(&ns, i).max(0) as u128 * (at(&fill, i) as u128 + 16)
            })
        }
        Growth::Replace => {
            let (Some(s), Some(from), Some(to)) = (arg(0), arg(1), arg(2)) else {
                return Ok((0, total_in));
            };
            let (s, from, to) = (
                value_lengths(s, rows),
                value_lengths(from, rows),
                value_lengths(to, rows),
            );
            per_row(&|i| {
                let s = at(&s, i) as u128;
                // An empty `from` matches between every two characters.
                let matches = s / (at(&from, i) as u128).max(1) + 1;
                s + matches * at(&to, i) as u128
            })
        }
        Growth::RegexpReplace => {
            let (Some(s), Some(pattern), Some(replacement)) = (arg(0), arg(1), arg(2)) else {
                return Ok((0, total_in));
            };
            patterns_within(pattern)?;
            let s = value_lengths(s, rows);
            let replacements = texts(replacement);
            per_row(&|i| {
                let r = match replacements.len() {
                    1 => replacements[0].as_deref(),
                    _ => replacements.get(i).and_then(|r| r.as_deref()),
                };
                regexp_replaced(at(&s, i) as u128, r.unwrap_or(""))
            })
        }
        Growth::Separated => {
            let sep = arg(0).map_or(0, |s| arg_bytes(s, rows) as u128);
            (0, total_in + sep * args.len() as u128)
        }
        Growth::ListToString => {
            let Some(list) = arg(0) else {
                return Ok((0, total_in));
            };
            let lists = value_lengths(list, rows);
            let extra: Vec<usize> = args[1..]
                .iter()
                .map(|a| value_lengths(a, rows).into_iter().max().unwrap_or(0))
                .collect();
            let per_item = 24 + extra.iter().sum::<usize>() as u128;
            // An item takes at least a byte of the list, and at most its text and the rest.
            per_row(&|i| (at(&lists, i) as u128 + 1) * per_item)
        }
        Growth::Pattern { arg: p, k, groups } => {
            let Some(pattern) = arg(p as usize) else {
                return Ok((0, total_in));
            };
            let longest = patterns_within(pattern)?;
            let k = if groups {
                longest.max(1) + k as usize
            } else {
                k as usize
            };
            (0, total_in * k as u128)
        }
    })
}

/// Bytes `regexp_replace` can make of a text of `s` bytes with `replacement`: every match (one
/// at each place at most) becomes the replacement, and each of its group references (`$1`, `\1`,
/// `${name}`) may copy all of the text.
fn regexp_replaced(s: u128, replacement: &str) -> u128 {
    let refs = replacement.matches(['$', '\\']).count() as u128;
    s + (s + 1) * (replacement.len() as u128 + refs * s)
}

/// The longest pattern among `v`'s rows, refused when one is over [`PATTERN_BYTES`].
fn patterns_within(v: &ColumnarValue) -> Result<usize> {
    let longest = texts(v)
        .iter()
        .map(|t| t.as_ref().map_or(0, String::len))
        .max()
        .unwrap_or(0);
    if longest > PATTERN_BYTES {
        return Err(refused(format!(
            "a regular expression of {longest} bytes, more than the limit of {PATTERN_BYTES}"
        )));
    }
    Ok(longest)
}

/// `out` refused when one of its values is over `bounds.value_bytes` or the whole over
/// `bounds.call_bytes`.
fn check_output(name: &str, out: &ColumnarValue, bounds: &ValueBounds) -> Result<()> {
    let (largest, total) = match out {
        ColumnarValue::Scalar(s) => (scalar_bytes(s), scalar_bytes(s)),
        ColumnarValue::Array(a) => {
            let largest = if is_variable(a.data_type()) {
                (0..a.len())
                    .map(|i| value_length(a.as_ref(), i))
                    .max()
                    .unwrap_or(0)
            } else {
                0
            };
            (largest, array_bytes(a.as_ref()))
        }
    };
    if largest > bounds.value_bytes {
        return Err(value_over(name, largest as u128, bounds));
    }
    if total > bounds.call_bytes {
        return Err(call_over(name, total as u128, bounds));
    }
    Ok(())
}

fn is_variable(d: &DataType) -> bool {
    matches!(
        d,
        DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::Map(..)
            | DataType::Struct(_)
    )
}

fn value_over(name: &str, bytes: u128, bounds: &ValueBounds) -> DataFusionError {
    refused(format!(
        "{name} would build a value of {bytes} bytes, more than the limit of {} bytes a value",
        bounds.value_bytes
    ))
}

fn call_over(name: &str, bytes: u128, bounds: &ValueBounds) -> DataFusionError {
    refused(format!(
        "{name} would build {bytes} bytes in one call, more than the limit of {} bytes a call",
        bounds.call_bytes
    ))
}

// ---------------------------------------------------------------------------------------------
// The guarded scalar function.

/// A scalar function whose calls are estimated before and checked after ([`Growth`]); in every
/// other way the function it wraps.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Guarded {
    inner: UdfEq<Arc<dyn ScalarUDFImpl>>,
    growth: Growth,
    bounds: ValueBounds,
}

impl Guarded {
    /// `udf` guarded (itself when it already is).
    pub fn wrap(udf: Arc<ScalarUDF>, growth: Growth, bounds: ValueBounds) -> ScalarUDF {
        if is_guarded(&udf) {
            return udf.as_ref().clone();
        }
        ScalarUDF::new_from_impl(Guarded {
            inner: udf.inner().clone().into(),
            growth,
            bounds,
        })
    }
}

fn is_guarded(udf: &ScalarUDF) -> bool {
    let any: &dyn Any = udf.inner().as_ref();
    any.is::<Guarded>() || any.is::<StringConcat>()
}

impl ScalarUDFImpl for Guarded {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }
    fn display_name(&self, args: &[Expr]) -> Result<String> {
        #[allow(deprecated)]
        self.inner.display_name(args)
    }
    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        self.inner.schema_name(args)
    }
    fn signature(&self) -> &Signature {
        self.inner.signature()
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }
    fn is_nullable(&self, args: &[Expr], schema: &dyn datafusion::common::ExprSchema) -> bool {
        #[allow(deprecated)]
        self.inner.is_nullable(args, schema)
    }
    fn is_strict(&self) -> bool {
        self.inner.is_strict()
    }
    fn with_updated_config(&self, config: &ConfigOptions) -> Option<ScalarUDF> {
        let updated = self.inner.with_updated_config(config)?;
        Some(Guarded::wrap(Arc::new(updated), self.growth, self.bounds))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = self.inner.name();
        let (largest, total) = estimate(self.growth, &args.args, args.number_rows)?;
        if largest > self.bounds.value_bytes as u128 {
            return Err(value_over(name, largest, &self.bounds));
        }
        if total > self.bounds.call_bytes as u128 {
            return Err(call_over(name, total, &self.bounds));
        }
        let out = self.inner.invoke_with_args(args)?;
        check_output(name, &out, &self.bounds)?;
        Ok(out)
    }
    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        // What the function simplifies to is made of DataFusion's own instances: guarded again.
        match self.inner.simplify(args, info)? {
            ExprSimplifyResult::Simplified(e) => Ok(ExprSimplifyResult::Simplified(
                guard_expr(e, &self.bounds)?.data,
            )),
            original => Ok(original),
        }
    }
    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }
    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
    fn output_ordering(
        &self,
        inputs: &[datafusion::logical_expr::sort_properties::ExprProperties],
    ) -> Result<datafusion::logical_expr::sort_properties::SortProperties> {
        self.inner.output_ordering(inputs)
    }
    fn preserves_lex_ordering(
        &self,
        inputs: &[datafusion::logical_expr::sort_properties::ExprProperties],
    ) -> Result<bool> {
        self.inner.preserves_lex_ordering(inputs)
    }
}

// ---------------------------------------------------------------------------------------------
// `||` on strings.

/// `a || b` on strings (NULL when either is), sized before it is built: DataFusion computes it as
/// an operator, outside any function, so the plan's `||` becomes a call of this.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct StringConcat {
    signature: Signature,
    ty: DataType,
    bounds: ValueBounds,
}

impl StringConcat {
    fn udf(ty: DataType, bounds: ValueBounds) -> ScalarUDF {
        ScalarUDF::new_from_impl(StringConcat {
            signature: Signature::any(2, Volatility::Immutable),
            ty,
            bounds,
        })
    }
}

impl ScalarUDFImpl for StringConcat {
    fn name(&self) -> &str {
        "||"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(self.ty.clone())
    }
    fn display_name(&self, args: &[Expr]) -> Result<String> {
        Ok(format!("{} || {}", args[0], args[1]))
    }
    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        Ok(format!(
            "{} || {}",
            args[0].schema_name(),
            args[1].schema_name()
        ))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let (_, total) = estimate(Growth::Linear(1), &args.args, rows)?;

        if total > self.bounds.call_bytes as u128 {
            return Err(call_over("||", total, &self.bounds));
        }
        let n = if scalar { 1 } else { rows };
        let arrays: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| {
                a.to_array(n)
                    .and_then(|a| Ok(datafusion::arrow::compute::cast(&a, &self.ty)?))
            })
            .collect::<Result<_>>()?;
        let joined = datafusion::arrow::compute::kernels::concat_elements::concat_elements_dyn(
            arrays[0].as_ref(),
            arrays[1].as_ref(),
        )?;
        let out = if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&joined, 0)?)
        } else {
            ColumnarValue::Array(joined)
        };
        check_output("||", &out, &self.bounds)?;
        Ok(out)
    }
}

// ---------------------------------------------------------------------------------------------
// Aggregates that build a value of their rows.

/// An aggregate whose value (a list or a text of its rows) is checked against the value bound;
/// in every other way the aggregate it wraps. It answers through plain accumulators.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct GuardedAggregate {
    inner: UdfEq<Arc<dyn AggregateUDFImpl>>,
    bounds: ValueBounds,
}

impl GuardedAggregate {
    /// `udaf` guarded (itself when it already is).
    pub fn wrap(udaf: Arc<AggregateUDF>, bounds: ValueBounds) -> AggregateUDF {
        let any: &dyn Any = udaf.inner().as_ref();
        if any.is::<GuardedAggregate>() {
            return udaf.as_ref().clone();
        }
        AggregateUDF::new_from_impl(GuardedAggregate {
            inner: udaf.inner().clone().into(),
            bounds,
        })
    }
}

impl GuardedAggregate {
    fn checked(&self, inner: Box<dyn Accumulator>) -> Box<dyn Accumulator> {
        Box::new(CheckedAccumulator {
            inner,
            name: self.inner.name().to_owned(),
            bounds: self.bounds,
        })
    }
}

impl AggregateUDFImpl for GuardedAggregate {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn schema_name(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.schema_name(params)
    }
    fn human_display(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.human_display(params)
    }
    fn display_name(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.display_name(params)
    }
    fn window_function_schema_name(&self, params: &WindowFunctionParams) -> Result<String> {
        self.inner.window_function_schema_name(params)
    }
    fn window_function_display_name(&self, params: &WindowFunctionParams) -> Result<String> {
        self.inner.window_function_display_name(params)
    }
    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.inner.groups_accumulator_supported(args)
    }
    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(CheckedGroups {
            inner: self.inner.create_groups_accumulator(args)?,
            name: self.inner.name().to_owned(),
            bounds: self.bounds,
        }))
    }
    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(self.checked(self.inner.create_sliding_accumulator(args)?))
    }
    fn reverse_expr(&self) -> ReversedUDAF {
        match self.inner.reverse_expr() {
            ReversedUDAF::Reversed(udaf) => {
                ReversedUDAF::Reversed(Arc::new(GuardedAggregate::wrap(udaf, self.bounds)))
            }
            other => other,
        }
    }
    fn is_descending(&self) -> Option<bool> {
        self.inner.is_descending()
    }
    fn set_monotonicity(&self, data_type: &DataType) -> SetMonotonicity {
        self.inner.set_monotonicity(data_type)
    }
    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }
    fn signature(&self) -> &Signature {
        self.inner.signature()
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }
    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        self.inner.return_field(arg_fields)
    }
    fn is_nullable(&self) -> bool {
        self.inner.is_nullable()
    }
    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(self.checked(self.inner.accumulator(args)?))
    }
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }
    fn order_sensitivity(&self) -> datafusion::logical_expr::utils::AggregateOrderSensitivity {
        self.inner.order_sensitivity()
    }
    fn with_beneficial_ordering(
        self: Arc<Self>,
        beneficial_ordering: bool,
    ) -> Result<Option<Arc<dyn AggregateUDFImpl>>> {
        let inner = Arc::clone(&self.inner).with_beneficial_ordering(beneficial_ordering)?;
        Ok(inner.map(|inner| {
            Arc::new(GuardedAggregate {
                inner: inner.into(),
                bounds: self.bounds,
            }) as Arc<dyn AggregateUDFImpl>
        }))
    }
    fn supports_null_handling_clause(&self) -> bool {
        self.inner.supports_null_handling_clause()
    }
    fn supports_within_group_clause(&self) -> bool {
        self.inner.supports_within_group_clause()
    }
    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        self.inner.default_value(data_type)
    }
    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

/// A groups accumulator whose values are checked against the value bound.
struct CheckedGroups {
    inner: Box<dyn GroupsAccumulator>,
    name: String,
    bounds: ValueBounds,
}

impl GroupsAccumulator for CheckedGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .update_batch(values, group_indices, opt_filter, total_num_groups)
    }
    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let out = self.inner.evaluate(emit_to)?;
        check_output(&self.name, &ColumnarValue::Array(out.clone()), &self.bounds)?;
        Ok(out)
    }
    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.inner.state(emit_to)
    }
    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .merge_batch(values, group_indices, total_num_groups)
    }
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        self.inner.convert_to_state(values, opt_filter)
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
}

/// An accumulator whose value is checked against the value bound.
#[derive(Debug)]
struct CheckedAccumulator {
    inner: Box<dyn Accumulator>,
    name: String,
    bounds: ValueBounds,
}

impl Accumulator for CheckedAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.update_batch(values)
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        let v = self.inner.evaluate()?;
        check_output(&self.name, &ColumnarValue::Scalar(v.clone()), &self.bounds)?;
        Ok(v)
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.inner.state()
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.inner.merge_batch(states)
    }
    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.retract_batch(values)
    }
    fn supports_retract_batch(&self) -> bool {
        self.inner.supports_retract_batch()
    }
}

// ---------------------------------------------------------------------------------------------
// The check of every plan.

/// The analyzer's last rule: every function of the plan allowed (and guarded), `||` on strings
/// guarded, every constant within the value bound.
#[derive(Debug)]
pub struct BoundsRule {
    bounds: ValueBounds,
}

impl AnalyzerRule for BoundsRule {
    fn name(&self) -> &str {
        "mlenergy_sql_bounds"
    }

    fn analyze(&self, plan: LogicalPlan, _: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| {
            // A node's expressions are over its inputs' columns (a leaf's, over its own).
            let schema = match plan.inputs().as_slice() {
                [] => plan.schema().clone(),
                inputs => Arc::new(datafusion::logical_expr::utils::merge_schema(inputs)),
            };
            let names = NamePreserver::new(&plan);
            plan.map_expressions(|e| {
                let saved = names.save(&e);
                let out = guard_expr_in(e, &self.bounds, Some(&schema))?;
                Ok(if out.transformed {
                    Transformed::yes(saved.restore(out.data))
                } else {
                    out
                })
            })
        })
        .map(|t| t.data)
    }
}

/// `e` with its functions guarded (or refused when not allowed) and its constants checked.
fn guard_expr(e: Expr, bounds: &ValueBounds) -> Result<Transformed<Expr>> {
    guard_expr_in(e, bounds, None)
}

fn guard_expr_in(
    e: Expr,
    bounds: &ValueBounds,
    schema: Option<&datafusion::common::DFSchemaRef>,
) -> Result<Transformed<Expr>> {
    e.transform_up(|e| match e {
        Expr::ScalarFunction(f) => {
            if is_guarded(&f.func) {
                return Ok(Transformed::no(Expr::ScalarFunction(f)));
            }
            let Some(growth) = growth_of(f.func.name()) else {
                return Err(not_allowed("scalar", f.func.name()));
            };
            let func = Arc::new(Guarded::wrap(f.func, growth, *bounds));
            Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction {
                func,
                args: f.args,
            })))
        }
        Expr::AggregateFunction(f) => {
            let name = f.func.name().to_owned();
            if !allowed_aggregate(&name) {
                return Err(not_allowed("aggregate", &name));
            }
            if !BUILDERS.contains(&name.as_str()) {
                return Ok(Transformed::no(Expr::AggregateFunction(f)));
            }
            let any: &dyn Any = f.func.inner().as_ref();
            if any.is::<GuardedAggregate>() {
                return Ok(Transformed::no(Expr::AggregateFunction(f)));
            }
            Ok(Transformed::yes(Expr::AggregateFunction(
                AggregateFunction {
                    func: Arc::new(GuardedAggregate::wrap(f.func, *bounds)),
                    params: f.params,
                },
            )))
        }
        Expr::WindowFunction(w) => {
            let mut w: WindowFunction = *w;
            match &w.fun {
                WindowFunctionDefinition::WindowUDF(u) => {
                    if !WINDOWS.contains(&u.name()) {
                        return Err(not_allowed("window", u.name()));
                    }
                    Ok(Transformed::no(Expr::WindowFunction(Box::new(w))))
                }
                WindowFunctionDefinition::AggregateUDF(a) => {
                    let name = a.name().to_owned();
                    if !allowed_aggregate(&name) {
                        return Err(not_allowed("aggregate", &name));
                    }
                    let any: &dyn Any = a.inner().as_ref();
                    if !BUILDERS.contains(&name.as_str()) || any.is::<GuardedAggregate>() {
                        return Ok(Transformed::no(Expr::WindowFunction(Box::new(w))));
                    }
                    w.fun = WindowFunctionDefinition::AggregateUDF(Arc::new(
                        GuardedAggregate::wrap(a.clone(), *bounds),
                    ));
                    Ok(Transformed::yes(Expr::WindowFunction(Box::new(w))))
                }
            }
        }
        Expr::HigherOrderFunction(f) => Err(not_allowed("higher-order", f.func.name())),
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::StringConcat,
            right,
        }) => {
            let ty = match schema {
                Some(s) => Some(left.get_type(s.as_ref())?),
                None => None,
            };
            match ty {
                Some(
                    ty @ (DataType::Utf8
                    | DataType::LargeUtf8
                    | DataType::Utf8View
                    | DataType::Binary
                    | DataType::LargeBinary
                    | DataType::BinaryView),
                ) => {
                    let func = Arc::new(StringConcat::udf(ty, *bounds));
                    Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction {
                        func,
                        args: vec![*left, *right],
                    })))
                }
                _ => Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr {
                    left,
                    op: Operator::StringConcat,
                    right,
                }))),
            }
        }
        Expr::Literal(v, meta) => {
            let bytes = scalar_bytes(&v);
            if bytes > bounds.value_bytes {
                return Err(refused(format!(
                    "a constant of {bytes} bytes, more than the limit of {} bytes a value",
                    bounds.value_bytes
                )));
            }
            Ok(Transformed::no(Expr::Literal(v, meta)))
        }
        e => Ok(Transformed::no(e)),
    })
}

/// Every function DataFusion registers in a new context, and ours, by kind (`scalar`,
/// `aggregate`, `window`, `table`), sorted: what the tests and the fuzz target call, allowed or
/// not.
pub fn registry() -> Vec<(&'static str, String)> {
    let ctx = SessionContext::new();
    ctx.register_udaf(super::sql_functions::logistic_fit());
    allowed(&ctx)
}

/// The functions a query may call, by kind, sorted: what `GET /v1/sql/functions` lists.
pub fn allowed(ctx: &SessionContext) -> Vec<(&'static str, String)> {
    let state = ctx.state();
    let mut out: Vec<(&'static str, String)> = Vec::new();
    out.extend(
        state
            .scalar_functions()
            .keys()
            .map(|n| ("scalar", n.clone())),
    );
    out.extend(
        state
            .aggregate_functions()
            .keys()
            .map(|n| ("aggregate", n.clone())),
    );
    out.extend(
        state
            .window_functions()
            .keys()
            .map(|n| ("window", n.clone())),
    );
    out.extend(state.table_functions().keys().map(|n| ("table", n.clone())));
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::util::pretty::pretty_format_batches;

    async fn answer(ctx: &SessionContext, sql: &str) -> Result<String> {
        let batches = ctx.sql(sql).await?.collect().await?;
        Ok(pretty_format_batches(&batches)?.to_string())
    }

    fn confined() -> SessionContext {
        let ctx = SessionContext::new();
        confine(&ctx, ValueBounds::default());
        ctx
    }

    /// After `confine`, a context holds only functions of the allow-lists; every function of
    /// DataFusion's registry is either there or gone, so one an upgrade adds is refused until it
    /// is classified here.
    #[test]
    fn a_confined_context_holds_only_allowed_functions() {
        let ctx = confined();
        let kept = allowed(&ctx);
        for (kind, name) in &kept {
            let listed = match *kind {
                "scalar" => {
                    growth_of(name).is_some()
                        || ctx.state().scalar_functions()[name.as_str()].name() != name
                }
                "aggregate" => {
                    allowed_aggregate(ctx.state().aggregate_functions()[name.as_str()].name())
                }
                "window" => WINDOWS.contains(&ctx.state().window_functions()[name.as_str()].name()),
                _ => TABLES.contains(&name.as_str()),
            };
            assert!(listed, "{kind} {name} is callable but not classified");
        }
        let names: BTreeSet<&str> = kept.iter().map(|(_, n)| n.as_str()).collect();
        for (_, name) in registry() {
            let refused = ["levenshtein", "array_replace_all", "array_transform"];
            if refused.contains(&name.as_str()) {
                assert!(!names.contains(name.as_str()), "{name}");
            }
        }
        assert!(names.contains("repeat") && names.contains("array_agg") && names.contains("rank"));
    }

    /// Ordinary queries answer the same with the bounds as without them (the guard only checks).
    #[tokio::test]
    async fn bounded_functions_answer_what_the_plain_ones_do() {
        let plain = SessionContext::new();
        let bounded = confined();
        for sql in [
            "SELECT repeat('ab', 3), lpad('x', 5, 'yz'), rpad('x', 3), upper('straße')",
            "SELECT 'a' || 'b' || NULL, 'a' || 'b', concat_ws('-', 'a', NULL, 'c')",
            "SELECT range(1, 10, 3), array_repeat(7, 3), generate_series(1, 3), [1, 2][2]",
            "SELECT replace('banana', 'a', 'oo'), regexp_replace('a-b-c', '-', '+', 'g')",
            "SELECT array_to_string([1, 2, 3], ', '), cardinality(array_resize([1], 4, 0))",
            "SELECT SUBSTRING('hello' FROM 2 FOR 3), EXTRACT(year FROM DATE '2026-11-29')",
            "SELECT v, v || '!' AS shout, array_agg(v) OVER (ORDER BY v) FROM (VALUES ('a'), ('b')) t(v)",
            "SELECT string_agg(v, ','), array_agg(v ORDER BY v DESC) FROM (VALUES ('a'), ('b')) t(v)",
            "SELECT count(*) FROM generate_series(1, 1000) a",
        ] {
            assert_eq!(
                answer(&bounded, sql).await.unwrap(),
                answer(&plain, sql).await.unwrap(),
                "{sql}"
            );
        }
    }

    /// Each way of building a value of gigabytes is refused before it builds, naming the bound.
    #[tokio::test]
    async fn builders_past_the_value_bound_are_refused_before_they_build() {
        let ctx = confined();
        for sql in [
            "SELECT count(*) FROM unnest(range(1, 2000000000))",
            "SELECT cardinality(array_repeat(1, 1000000000))",
            "SELECT length(lpad('x', 2000000000, 'y'))",
            "SELECT cardinality(range(1, 1000000000))",
            "SELECT length(repeat('x', 1000000000))",
            "SELECT length(repeat('x', 9223372036854775807))",
            "SELECT length(repeat('x', 10000) || repeat('x', 10000))",
            "SELECT length(replace(repeat('a', 8000), 'a', repeat('b', 8000)))",
            "SELECT length(regexp_replace(repeat('a', 8000), '(a)', '$1$1$1', 'g'))",
            "SELECT cardinality(array_resize([1], 1000000000, 1))",
            "SELECT cardinality(range(TIMESTAMP '1970-01-01', TIMESTAMP '2200-01-01', INTERVAL '1 second'))",
            "WITH RECURSIVE t(x, n) AS (SELECT 'x', 1 UNION ALL SELECT x || x, n + 1 FROM t \
             WHERE n < 64) SELECT max(length(x)) FROM t",
            "SELECT length(array_to_string(array_agg(v), ',')) FROM generate_series(1, 100000) t(v)",
        ] {
            let e = answer(&ctx, sql).await.unwrap_err();
            let root = e.find_root().to_string();
            assert!(root.contains(VALUE_LIMIT), "{sql}: {root}");
        }
        let long = format!("SELECT '{}' AS s", "x".repeat(20_000));
        let e = answer(&ctx, &long)
            .await
            .unwrap_err()
            .find_root()
            .to_string();
        assert!(e.contains("a constant of 20000 bytes"), "{e}");
        let e = answer(&ctx, "SELECT levenshtein('a', 'b')")
            .await
            .unwrap_err();
        assert!(e.to_string().contains("levenshtein"), "{e}");
    }
}
