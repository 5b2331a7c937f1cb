//! Grouping with aggregates (docs/toolkit.md §10.3): groups in first-occurrence order of the
//! filtered runs (default order), keyed by the `by` fields; count, min, max, mean, median and sum
//! per numeric field, and argmin/argmax carrying the whole winning run. Nulls are skipped by every
//! aggregate; an aggregate over no values is null. Means and sums use numpy's pairwise summation.

use std::collections::HashMap;
use std::str::FromStr;

use super::error::EngineError;
use super::frame::{ColumnData, Frame, FrameColumn, Value};
use super::query::{Filter, Stability};
use super::table::RunTable;
use mlenergy_pycompat::numpy::{np_mean, np_median, np_sum};

/// An aggregate function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    Count,
    Min,
    Max,
    Mean,
    Median,
    Sum,
    Argmin,
    Argmax,
}

impl AggFunc {
    pub const NAMES: [&'static str; 8] = [
        "count", "min", "max", "mean", "median", "sum", "argmin", "argmax",
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AggFunc::Count => "count",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
            AggFunc::Mean => "mean",
            AggFunc::Median => "median",
            AggFunc::Sum => "sum",
            AggFunc::Argmin => "argmin",
            AggFunc::Argmax => "argmax",
        }
    }
}

impl FromStr for AggFunc {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Ok(match s {
            "count" => AggFunc::Count,
            "min" => AggFunc::Min,
            "max" => AggFunc::Max,
            "mean" => AggFunc::Mean,
            "median" => AggFunc::Median,
            "sum" => AggFunc::Sum,
            "argmin" => AggFunc::Argmin,
            "argmax" => AggFunc::Argmax,
            _ => return Err(()),
        })
    }
}

/// `func(field)`, or `func` alone: `count` counts runs, any other function applies to every
/// numeric field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggSpec {
    pub func: AggFunc,
    pub field: Option<String>,
}

/// A grouping question.
#[derive(Debug, Clone, Default)]
pub struct GroupQuery {
    pub by: Vec<String>,
    pub aggs: Vec<AggSpec>,
    pub filters: Vec<Filter>,
    pub stability: Stability,
}

/// Groups as a table: the `by` columns, `count`, then one column per aggregate
/// (`{func}_{field}`; argmin/argmax are struct columns holding the winning run).
#[derive(Debug, Clone)]
pub struct GroupResult {
    pub by: Vec<String>,
    pub frame: Frame,
}

fn numeric_values(col: &ColumnData, rows: &[usize]) -> Vec<(usize, f64)> {
    rows.iter()
        .filter_map(|&r| col.get(r).as_f64().map(|x| (r, x)))
        .collect()
}

/// Row of the smallest (or largest) non-null value; the first occurrence wins ties, as numpy's
/// argmin/argmax.
fn extreme(col: &ColumnData, rows: &[usize], smallest: bool) -> Option<usize> {
    numeric_values(col, rows)
        .into_iter()
        .reduce(|a, b| {
            if (smallest && b.1 < a.1) || (!smallest && b.1 > a.1) {
                b
            } else {
                a
            }
        })
        .map(|(r, _)| r)
}

impl RunTable {
    /// `rows` split by the values of the columns `by_cols`, groups in the order of their first
    /// row (the toolkit's `group_by`).
    pub fn group_rows(&self, by_cols: &[usize], rows: Vec<usize>) -> Vec<Vec<usize>> {
        let mut order: Vec<Vec<usize>> = Vec::new();
        let mut index: HashMap<Vec<String>, usize> = HashMap::new();
        for r in rows {
            let key: Vec<String> = by_cols
                .iter()
                .map(|&c| format!("{:?}", self.column(c).get(r)))
                .collect();
            let g = *index.entry(key).or_insert_with(|| {
                order.push(Vec::new());
                order.len() - 1
            });
            order[g].push(r);
        }
        order
    }

    pub fn group(&self, q: &GroupQuery) -> Result<GroupResult, EngineError> {
        let by_cols =
            q.by.iter()
                .map(|f| self.require_field(f))
                .collect::<Result<Vec<_>, _>>()?;
        let plan = self.aggregate_plan(&q.aggs)?;

        let rows = self.filter_rows(&q.filters, q.stability)?;
        let order = self.group_rows(&by_cols, rows);

        let firsts: Vec<Option<usize>> = order.iter().map(|g| g.first().copied()).collect();
        let mut columns: Vec<FrameColumn> = by_cols
            .iter()
            .map(|&c| FrameColumn {
                name: self.fields[c].name.to_string(),
                data: self.column(c).take(&firsts),
            })
            .collect();
        columns.push(FrameColumn {
            name: "count".into(),
            data: ColumnData::Int(order.iter().map(|g| Some(g.len() as i64)).collect()),
        });
        for (func, target) in plan {
            let c = target.expect("only count(*) has no target, and it is skipped");
            let name = format!("{}_{}", func.as_str(), self.fields[c].name);
            let data = self.aggregate_column(func, c, &order);
            columns.push(FrameColumn { name, data });
        }
        Ok(GroupResult {
            by: q.by.clone(),
            frame: Frame { columns },
        })
    }

    /// The aggregates asked for resolved to (function, column) pairs, each once and in the order
    /// asked: a field-less function expands to every numeric field, and a field-less `count` is
    /// left out (the `count` column is always there).
    fn aggregate_plan(
        &self,
        aggs: &[AggSpec],
    ) -> Result<Vec<(AggFunc, Option<usize>)>, EngineError> {
        let mut plan: Vec<(AggFunc, Option<usize>)> = Vec::new();
        for spec in aggs {
            let targets: Vec<Option<usize>> = match (&spec.field, spec.func) {
                (None, AggFunc::Count) => continue, // `count` is always present
                (Some(f), AggFunc::Count) => vec![Some(self.require_field(f)?)],
                (Some(f), _) => vec![Some(self.require_numeric(f)?)],
                (None, _) => (1..self.fields.len())
                    .filter(|&i| self.fields[i].ty.is_numeric())
                    .map(Some)
                    .collect(),
            };
            for t in targets {
                if !plan.contains(&(spec.func, t)) {
                    plan.push((spec.func, t));
                }
            }
        }
        Ok(plan)
    }

    /// `func` of column `c` over each group of `order`: one value per group (for argmin and
    /// argmax, the whole winning run as a struct).
    fn aggregate_column(&self, func: AggFunc, c: usize, order: &[Vec<usize>]) -> ColumnData {
        let col = self.column(c);
        let is_int = matches!(col, ColumnData::Int(_));
        match func {
            AggFunc::Count => ColumnData::Int(
                order
                    .iter()
                    .map(|g| Some(g.iter().filter(|&&r| col.get(r) != Value::Null).count() as i64))
                    .collect(),
            ),
            AggFunc::Min | AggFunc::Max => {
                let winners: Vec<Option<usize>> = order
                    .iter()
                    .map(|g| extreme(col, g, func == AggFunc::Min))
                    .collect();
                col.take(&winners)
            }
            AggFunc::Mean | AggFunc::Median => ColumnData::Float(
                order
                    .iter()
                    .map(|g| {
                        let v: Vec<f64> =
                            numeric_values(col, g).into_iter().map(|(_, x)| x).collect();
                        if func == AggFunc::Mean {
                            np_mean(&v)
                        } else {
                            np_median(&v)
                        }
                    })
                    .collect(),
            ),
            AggFunc::Sum if is_int => ColumnData::Int(
                order
                    .iter()
                    .map(|g| {
                        let v: Vec<i64> = g
                            .iter()
                            .filter_map(|&r| match col.get(r) {
                                Value::Int(x) => Some(x),
                                _ => None,
                            })
                            .collect();
                        (!v.is_empty()).then(|| v.iter().fold(0i64, |a, b| a.wrapping_add(*b)))
                    })
                    .collect(),
            ),
            AggFunc::Sum => ColumnData::Float(
                order
                    .iter()
                    .map(|g| {
                        let v: Vec<f64> =
                            numeric_values(col, g).into_iter().map(|(_, x)| x).collect();
                        (!v.is_empty()).then(|| np_sum(&v))
                    })
                    .collect(),
            ),
            AggFunc::Argmin | AggFunc::Argmax => {
                let winners: Vec<Option<usize>> = order
                    .iter()
                    .map(|g| extreme(col, g, func == AggFunc::Argmin))
                    .collect();
                self.winning_runs(&winners)
            }
        }
    }

    /// The runs at `winners` (one per group) as a struct column of every field, null where a
    /// group has no winner.
    fn winning_runs(&self, winners: &[Option<usize>]) -> ColumnData {
        ColumnData::Struct {
            fields: self
                .frame
                .columns
                .iter()
                .map(|fc| FrameColumn {
                    name: fc.name.clone(),
                    data: fc.data.take(winners),
                })
                .collect(),
            valid: winners.iter().map(Option::is_some).collect(),
        }
    }
}
