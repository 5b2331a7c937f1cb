//! Column statistics of the filtered runs, named as the Hugging Face dataset viewer's
//! `/statistics` names them (`num_examples`, `statistics[]` of `column_name`, `column_type`,
//! `column_statistics`), at full precision: numbers as pandas' `describe()` computes them
//! (numpy's pairwise sums over the column with missing values as zeros, the sample standard
//! deviation, the linear 50th percentile) with `np.histogram`'s ten bins; strings and booleans
//! as `value_counts()`.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json, json};

use crate::engine::RunTable;
use crate::engine::fields::FieldType;
use crate::engine::frame::{ColumnData, Frame, FrameColumn, Value};
use crate::pycompat::numpy::{np_histogram, np_percentile, np_sum};
use crate::service::ServiceError;

use super::answer::{Answer, Nullable, Rows, Shape};
use super::request::Request;

/// Bins of a numeric column's histogram (`np.histogram`'s default).
const BINS: usize = 10;

/// One column's statistics.
struct Column {
    name: String,
    kind: &'static str,
    nan_count: usize,
    stats: Stats,
}

// One per column, a few dozen at most: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Stats {
    Number {
        min: Option<Json>,
        max: Option<Json>,
        mean: Option<f64>,
        median: Option<f64>,
        std: Option<f64>,
        hist: Vec<u64>,
        bin_edges: Vec<f64>,
    },
    Labels {
        /// Values by count, descending (ties by value).
        frequencies: Vec<(String, u64)>,
    },
}

/// The statistics of the columns `fields` names (default: every column) over the filtered runs.
pub(super) fn answer(req: &Request, table: &RunTable) -> Result<Answer, ServiceError> {
    let q = req.params.run_filters(req.domain)?;
    let rows = table.filter_rows(&q.filters, q.stability)?;
    let warnings = req.params.filter_warnings(req.domain, table);
    // The columns named, in that order (the run lists' projection would put run_id first).
    let columns: Vec<usize> = match req.params.fields(table)? {
        Some(names) => names.iter().filter_map(|n| table.field_index(n)).collect(),
        None => (0..table.fields.len()).collect(),
    };
    let stats: Vec<Column> = columns.iter().map(|&c| column(table, c, &rows)).collect();
    let n = rows.len();
    let document = json!({
        "num_examples": n,
        "statistics": stats.iter().map(|c| c.json(n)).collect::<Vec<_>>(),
        "partial": false,
        "warnings": &warnings,
    });
    Ok(Answer {
        shape: Shape::Document(document),
        rows: Rows::Frame(frame(&stats, n)),
        nullable: Nullable::All,
        total: Some(stats.len()),
        next: None,
        warnings,
    })
}

/// The statistics of column `c` over `rows`.
fn column(table: &RunTable, c: usize, rows: &[usize]) -> Column {
    let spec = &table.fields[c];
    let data = table.column(c);
    let cells = rows.iter().map(|&r| data.get(r));
    let name = spec.name.to_string();
    match spec.ty {
        FieldType::Int64 | FieldType::Double => {
            // pandas' nan-aware reductions: missing values are zeros in place for the sums.
            let mut filled = Vec::with_capacity(rows.len());
            let mut present = Vec::with_capacity(rows.len());
            let (mut min, mut max): (Option<Value>, Option<Value>) = (None, None);
            for v in cells {
                match v.as_f64().filter(|x| !x.is_nan()) {
                    Some(x) => {
                        filled.push(x);
                        present.push(x);
                        if min.is_none_or(|m| x < m.as_f64().unwrap_or(f64::NAN)) {
                            min = Some(v);
                        }
                        if max.is_none_or(|m| x > m.as_f64().unwrap_or(f64::NAN)) {
                            max = Some(v);
                        }
                    }
                    None => filled.push(0.0),
                }
            }
            let count = present.len();
            let mean = (count > 0).then(|| np_sum(&filled) / count as f64);
            let std = mean.filter(|_| count > 1).map(|m| {
                let squares: Vec<f64> = filled
                    .iter()
                    .zip(rows.iter().map(|&r| data.get(r)))
                    .map(|(x, v)| match v.as_f64().filter(|x| !x.is_nan()) {
                        Some(_) => (m - x) * (m - x),
                        None => 0.0,
                    })
                    .collect();
                (np_sum(&squares) / (count - 1) as f64).sqrt()
            });
            let (bin_edges, hist) = if count > 0 {
                np_histogram(&present, BINS)
            } else {
                (Vec::new(), Vec::new())
            };
            Column {
                name,
                kind: if spec.ty == FieldType::Int64 {
                    "int"
                } else {
                    "float"
                },
                nan_count: rows.len() - count,
                stats: Stats::Number {
                    min: min.map(cell),
                    max: max.map(cell),
                    mean,
                    median: np_percentile(&present, 50.0),
                    std,
                    hist,
                    bin_edges,
                },
            }
        }
        FieldType::String | FieldType::Bool => {
            let mut counts: BTreeMap<String, u64> = BTreeMap::new();
            let mut missing = 0;
            for v in cells {
                match v {
                    Value::Str(s) => *counts.entry(s.to_string()).or_default() += 1,
                    Value::Bool(b) => {
                        *counts
                            .entry(if b { "True" } else { "False" }.to_string())
                            .or_default() += 1
                    }
                    _ => missing += 1,
                }
            }
            let mut frequencies: Vec<(String, u64)> = counts.into_iter().collect();
            frequencies.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            Column {
                name,
                kind: if spec.ty == FieldType::Bool {
                    "bool"
                } else {
                    "string_label"
                },
                nan_count: missing,
                stats: Stats::Labels { frequencies },
            }
        }
    }
}

/// A cell as JSON: an integer stays one.
fn cell(v: Value) -> Json {
    match v {
        Value::Int(i) => json!(i),
        Value::Float(x) => json!(x),
        _ => Json::Null,
    }
}

/// `nan_count / n`, 0 for no rows (the viewer's convention).
fn proportion(nan_count: usize, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        nan_count as f64 / n as f64
    }
}

impl Column {
    fn json(&self, n: usize) -> Json {
        let mut s = Map::new();
        s.insert("nan_count".into(), json!(self.nan_count));
        s.insert(
            "nan_proportion".into(),
            json!(proportion(self.nan_count, n)),
        );
        match &self.stats {
            Stats::Number {
                min,
                max,
                mean,
                median,
                std,
                hist,
                bin_edges,
            } => {
                s.insert("min".into(), min.clone().unwrap_or(Json::Null));
                s.insert("max".into(), max.clone().unwrap_or(Json::Null));
                s.insert("mean".into(), json!(mean));
                s.insert("median".into(), json!(median));
                s.insert("std".into(), json!(std));
                s.insert(
                    "histogram".into(),
                    if hist.is_empty() {
                        Json::Null
                    } else {
                        json!({"hist": hist, "bin_edges": bin_edges})
                    },
                );
            }
            Stats::Labels { frequencies } => {
                s.insert("n_unique".into(), json!(frequencies.len()));
                let map: Map<String, Json> = frequencies
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect();
                s.insert("frequencies".into(), Json::Object(map));
            }
        }
        json!({
            "column_name": self.name,
            "column_type": self.kind,
            "column_statistics": s,
        })
    }
}

/// The statistics as rows, one per column, for the tabular formats (histograms and frequencies
/// as JSON texts).
fn frame(stats: &[Column], n: usize) -> Frame {
    let text = |f: &dyn Fn(&Column) -> Option<String>| {
        ColumnData::Str(stats.iter().map(|c| f(c).map(Into::into)).collect())
    };
    let number =
        |f: &dyn Fn(&Column) -> Option<f64>| ColumnData::Float(stats.iter().map(f).collect());
    let numbers = |c: &Column| match &c.stats {
        Stats::Number {
            min,
            max,
            mean,
            median,
            std,
            ..
        } => Some((
            min.as_ref().and_then(Json::as_f64),
            max.as_ref().and_then(Json::as_f64),
            *mean,
            *median,
            *std,
        )),
        Stats::Labels { .. } => None,
    };
    let col = |name: &str, data| FrameColumn {
        name: name.to_string(),
        data,
    };
    Frame {
        columns: vec![
            col("column_name", text(&|c| Some(c.name.clone()))),
            col("column_type", text(&|c| Some(c.kind.to_string()))),
            col(
                "num_examples",
                ColumnData::Int(vec![Some(n as i64); stats.len()]),
            ),
            col(
                "nan_count",
                ColumnData::Int(stats.iter().map(|c| Some(c.nan_count as i64)).collect()),
            ),
            col(
                "nan_proportion",
                number(&|c| Some(proportion(c.nan_count, n))),
            ),
            col("min", number(&|c| numbers(c).and_then(|v| v.0))),
            col("max", number(&|c| numbers(c).and_then(|v| v.1))),
            col("mean", number(&|c| numbers(c).and_then(|v| v.2))),
            col("median", number(&|c| numbers(c).and_then(|v| v.3))),
            col("std", number(&|c| numbers(c).and_then(|v| v.4))),
            col(
                "n_unique",
                ColumnData::Int(
                    stats
                        .iter()
                        .map(|c| match &c.stats {
                            Stats::Labels { frequencies } => Some(frequencies.len() as i64),
                            Stats::Number { .. } => None,
                        })
                        .collect(),
                ),
            ),
            col(
                "histogram",
                text(&|c| match &c.stats {
                    Stats::Number {
                        hist, bin_edges, ..
                    } if !hist.is_empty() => {
                        Some(json!({"hist": hist, "bin_edges": bin_edges}).to_string())
                    }
                    _ => None,
                }),
            ),
            col(
                "frequencies",
                text(&|c| match &c.stats {
                    Stats::Labels { frequencies } => Some(
                        Json::Object(
                            frequencies
                                .iter()
                                .map(|(k, v)| (k.clone(), json!(v)))
                                .collect(),
                        )
                        .to_string(),
                    ),
                    Stats::Number { .. } => None,
                }),
            ),
        ],
    }
}
