//! Run selection with the toolkit's filter semantics (docs/toolkit.md §10.2): exact-set
//! membership per field (OR within a filter, AND across filters), inclusive numeric ranges,
//! stability, then sorting, paging and projection.

use std::cmp::Ordering;

use super::domain::Domain;
use super::error::EngineError;
use super::frame::{ColumnData, Frame, Value};
use super::table::{RunTable, cmp_values};

/// Which LLM runs to keep by `is_stable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stability {
    #[default]
    Stable,
    Unstable,
    All,
}

/// One filter on a field.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// Field value is one of these strings (exact, case-sensitive).
    OneOf { field: String, values: Vec<String> },
    /// Numeric field equals one of these numbers (`16 == 16.0`).
    NumOneOf { field: String, values: Vec<f64> },
    /// Numeric field within inclusive bounds; a missing bound is open.
    Range {
        field: String,
        min: Option<f64>,
        max: Option<f64>,
    },
}

/// A sort key; `descending` for a leading `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    pub field: String,
    pub descending: bool,
}

/// A run-list question.
#[derive(Debug, Clone, Default)]
pub struct RunQuery {
    pub filters: Vec<Filter>,
    /// Ignored for diffusion, which has no stability.
    pub stability: Stability,
    /// Extra sort keys applied before the default order (which always breaks ties).
    pub sort: Vec<SortKey>,
    pub offset: usize,
    pub limit: Option<usize>,
    /// Projection; `run_id` is always included first.
    pub fields: Option<Vec<String>>,
}

/// The rows a query matched.
#[derive(Debug, Clone)]
pub struct Selection {
    /// Rows of this page, in answer order.
    pub rows: Vec<usize>,
    /// Matching rows before paging.
    pub total: usize,
    /// Column positions to output.
    pub columns: Vec<usize>,
}

enum Compiled {
    OneOf(usize, Vec<String>),
    NumOneOf(usize, Vec<f64>),
    Range(usize, Option<f64>, Option<f64>),
}

impl Compiled {
    fn keep(&self, t: &RunTable, row: usize) -> bool {
        match self {
            Compiled::OneOf(c, vals) => match t.column(*c).get(row) {
                Value::Str(s) => vals.iter().any(|v| v == s),
                _ => false,
            },
            Compiled::NumOneOf(c, vals) => t
                .column(*c)
                .get(row)
                .as_f64()
                .is_some_and(|x| vals.contains(&x)),
            Compiled::Range(c, min, max) => t
                .column(*c)
                .get(row)
                .as_f64()
                .is_some_and(|x| min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m)),
        }
    }

    /// Keep the `rows` this filter keeps: a column's values read as its own type over all the
    /// rows (`keep`, a row at a time through `Value`, was most of a fresh run query's filtering).
    fn retain(&self, t: &RunTable, rows: &mut Vec<usize>) {
        let within = |x: f64, min: &Option<f64>, max: &Option<f64>| {
            min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m)
        };
        match self {
            Compiled::OneOf(c, vals) => {
                if let ColumnData::Str(v) = t.column(*c) {
                    return rows
                        .retain(|&r| v[r].as_deref().is_some_and(|s| vals.iter().any(|x| x == s)));
                }
            }
            Compiled::NumOneOf(c, vals) => match t.column(*c) {
                ColumnData::Int(v) => {
                    return rows.retain(|&r| v[r].is_some_and(|x| vals.contains(&(x as f64))));
                }
                ColumnData::Float(v) => {
                    return rows.retain(|&r| v[r].is_some_and(|x| vals.contains(&x)));
                }
                _ => {}
            },
            Compiled::Range(c, min, max) => match t.column(*c) {
                ColumnData::Int(v) => {
                    return rows.retain(|&r| v[r].is_some_and(|x| within(x as f64, min, max)));
                }
                ColumnData::Float(v) => {
                    return rows.retain(|&r| v[r].is_some_and(|x| within(x, min, max)));
                }
                _ => {}
            },
        }
        rows.retain(|&r| self.keep(t, r));
    }
}

/// A sort key's column, typed once per sort rather than per comparison; the order is
/// [`cmp_values`]'s (nulls last in either direction, floats by `total_cmp`).
enum SortColumn<'a> {
    Float(&'a [Option<f64>]),
    Int(&'a [Option<i64>]),
    Str(&'a [Option<std::sync::Arc<str>>]),
    Other(&'a ColumnData),
}

impl SortColumn<'_> {
    fn of(c: &ColumnData) -> SortColumn<'_> {
        match c {
            ColumnData::Float(v) => SortColumn::Float(v),
            ColumnData::Int(v) => SortColumn::Int(v),
            ColumnData::Str(v) => SortColumn::Str(v),
            other => SortColumn::Other(other),
        }
    }

    /// Rows `a` and `b` in this key's order, `desc` reversing all but the nulls' place.
    fn cmp(&self, a: usize, b: usize, desc: bool) -> Ordering {
        fn nulls_last<T>(
            x: Option<T>,
            y: Option<T>,
            desc: bool,
            f: impl Fn(T, T) -> Ordering,
        ) -> Ordering {
            match (x, y) {
                (None, None) => Ordering::Equal,
                (None, _) => Ordering::Greater,
                (_, None) => Ordering::Less,
                (Some(x), Some(y)) if desc => f(y, x),
                (Some(x), Some(y)) => f(x, y),
            }
        }
        match self {
            SortColumn::Float(v) => nulls_last(v[a], v[b], desc, |x, y| x.total_cmp(&y)),
            SortColumn::Int(v) => nulls_last(v[a], v[b], desc, |x, y| x.cmp(&y)),
            SortColumn::Str(v) => {
                nulls_last(v[a].as_deref(), v[b].as_deref(), desc, |x, y| x.cmp(y))
            }
            SortColumn::Other(c) => {
                let value = |r: usize| Some(c.get(r)).filter(|v| !matches!(v, Value::Null));
                nulls_last(value(a), value(b), desc, cmp_values)
            }
        }
    }
}

impl RunTable {
    fn compile(&self, f: &Filter) -> Result<Compiled, EngineError> {
        Ok(match f {
            Filter::OneOf { field, values } => {
                Compiled::OneOf(self.require_field(field)?, values.clone())
            }
            Filter::NumOneOf { field, values } => {
                Compiled::NumOneOf(self.require_numeric(field)?, values.clone())
            }
            Filter::Range { field, min, max } => {
                Compiled::Range(self.require_numeric(field)?, *min, *max)
            }
        })
    }

    /// Rows (in default order) that pass the filters and the stability rule.
    pub fn filter_rows(
        &self,
        filters: &[Filter],
        stability: Stability,
    ) -> Result<Vec<usize>, EngineError> {
        let compiled = filters
            .iter()
            .map(|f| self.compile(f))
            .collect::<Result<Vec<_>, _>>()?;
        let stable_col = match (self.domain, stability) {
            (Domain::Llm, Stability::Stable | Stability::Unstable) => {
                Some(self.require_field("is_stable")?)
            }
            _ => None,
        };
        let want_stable = stability == Stability::Stable;
        let mut rows: Vec<usize> = (0..self.len()).collect();
        // One filter after another over the rows left (a row is kept when every filter and the
        // stability rule keep it, so the order is free): strings first, which keep fewest.
        let (strings, numbers): (Vec<_>, Vec<_>) = compiled
            .iter()
            .partition(|f| matches!(f, Compiled::OneOf(..)));
        for f in &strings {
            f.retain(self, &mut rows);
        }
        if let Some(c) = stable_col {
            match self.column(c) {
                ColumnData::Bool(v) => {
                    rows.retain(|&r| v[r].map_or(!want_stable, |b| b == want_stable));
                }
                other => rows.retain(|&r| match other.get(r) {
                    Value::Bool(b) => b == want_stable,
                    _ => !want_stable,
                }),
            }
        }
        for f in &numbers {
            f.retain(self, &mut rows);
        }
        Ok(rows)
    }

    /// Stable sort of `rows` by `keys` (nulls last in either direction).
    pub fn sort_rows(&self, rows: &mut [usize], keys: &[SortKey]) -> Result<(), EngineError> {
        if keys.is_empty() {
            return Ok(());
        }
        let cols = keys
            .iter()
            .map(|k| Ok((self.require_field(&k.field)?, k.descending)))
            .collect::<Result<Vec<_>, EngineError>>()?;
        let keys: Vec<(SortColumn<'_>, bool)> = cols
            .iter()
            .map(|&(c, desc)| (SortColumn::of(self.column(c)), desc))
            .collect();
        rows.sort_by(|&a, &b| {
            for (col, desc) in &keys {
                let o = col.cmp(a, b, *desc);
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
        Ok(())
    }

    /// Output columns for a projection (`run_id` first, then the named fields in order given).
    pub fn projection(&self, fields: Option<&[String]>) -> Result<Vec<usize>, EngineError> {
        match fields {
            None => Ok((0..self.fields.len()).collect()),
            Some(names) => {
                let mut cols = vec![0];
                for n in names {
                    let i = self.require_field(n)?;
                    if !cols.contains(&i) {
                        cols.push(i);
                    }
                }
                Ok(cols)
            }
        }
    }

    /// Answer a run-list query.
    pub fn select(&self, q: &RunQuery) -> Result<Selection, EngineError> {
        let columns = self.projection(q.fields.as_deref())?;
        let mut rows = self.filter_rows(&q.filters, q.stability)?;
        self.sort_rows(&mut rows, &q.sort)?;
        let total = rows.len();
        let start = q.offset.min(total);
        let end = q
            .limit
            .map_or(total, |l| start.saturating_add(l).min(total));
        Ok(Selection {
            rows: rows[start..end].to_vec(),
            total,
            columns,
        })
    }

    /// The selected rows and columns as a frame.
    pub fn frame_of(&self, sel: &Selection) -> Frame {
        self.frame.select(&sel.rows, &sel.columns)
    }
}

#[cfg(all(test, feature = "datafusion"))]
mod tests {
    use super::*;

    /// Filtering a filter at a time keeps exactly the rows a row at a time keeps, in the same
    /// order, for every kind of filter on string, integer and float fields, nulls among them.
    #[tokio::test]
    async fn filters_keep_what_each_row_keeps() {
        let dataset = crate::load::sample_dataset().await;
        let t = &dataset.llm;
        let one_of = |field: &str, values: &[&str]| Filter::OneOf {
            field: field.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        };
        let range = |field: &str, min: Option<f64>, max: Option<f64>| Filter::Range {
            field: field.into(),
            min,
            max,
        };
        let nums = |field: &str, values: &[f64]| Filter::NumOneOf {
            field: field.into(),
            values: values.to_vec(),
        };
        let sets: Vec<Vec<Filter>> = vec![
            vec![],
            vec![one_of("task", &["gpqa"])],
            vec![
                range("max_num_seqs", Some(64.0), Some(256.0)),
                one_of("task", &["gpqa", "lm-arena-chat"]),
                range("num_gpus", None, Some(4.0)),
                one_of("gpu_model", &["B200"]),
            ],
            vec![
                nums("num_gpus", &[1.0, 8.0]),
                range("energy_per_token_joules", Some(0.05), None),
            ],
            vec![
                range("median_itl_ms", Some(10.0), Some(30.5)),
                nums("max_num_seqs", &[64.0]),
            ],
            vec![one_of("model_id", &["no such model"])],
            vec![range("num_gpus", Some(2.0), Some(1.0))],
        ];
        let mut kept = Vec::new();
        for filters in &sets {
            for stability in [Stability::Stable, Stability::Unstable, Stability::All] {
                let rows = t.filter_rows(filters, stability).unwrap();
                let compiled: Vec<_> = filters.iter().map(|f| t.compile(f).unwrap()).collect();
                let stable = t.require_field("is_stable").unwrap();
                let each: Vec<usize> = (0..t.len())
                    .filter(|&r| match stability {
                        Stability::All => true,
                        s => match t.column(stable).get(r) {
                            Value::Bool(b) => b == (s == Stability::Stable),
                            _ => s != Stability::Stable,
                        },
                    })
                    .filter(|&r| compiled.iter().all(|f| f.keep(t, r)))
                    .collect();
                assert_eq!(rows, each, "{filters:?} {stability:?}");
                kept.push(rows.len());
            }
        }
        // The filters asked different questions: none, some and all rows among the answers (the
        // sample's runs are all stable: asked for unstable ones, none).
        assert!(kept.contains(&0) && kept.contains(&t.len()), "{kept:?}");
        assert!(
            kept.iter().filter(|&&n| n > 0 && n < t.len()).count() >= 8,
            "{kept:?}"
        );
    }

    /// The typed sort orders rows exactly as comparing their values one by one does (nulls last
    /// in either direction, ties kept in table order), for float, integer, string and boolean
    /// keys, several at once.
    #[tokio::test]
    async fn sorts_order_as_the_values_compare() {
        let dataset = crate::load::sample_dataset().await;
        let t = &dataset.llm;
        let key = |field: &str, descending: bool| SortKey {
            field: field.into(),
            descending,
        };
        let sets = vec![
            vec![key("energy_per_token_joules", false)],
            vec![key("energy_per_token_joules", true)],
            vec![key("task", false), key("max_num_seqs", true)],
            vec![
                key("gpu_model", true),
                key("num_gpus", false),
                key("median_itl_ms", true),
            ],
            vec![key("is_stable", true), key("model_id", false)],
        ];
        for keys in &sets {
            let mut rows: Vec<usize> = (0..t.len()).rev().collect();
            t.sort_rows(&mut rows, keys).unwrap();
            let mut want: Vec<usize> = (0..t.len()).rev().collect();
            let cols: Vec<(usize, bool)> = keys
                .iter()
                .map(|k| (t.require_field(&k.field).unwrap(), k.descending))
                .collect();
            want.sort_by(|&a, &b| {
                for &(c, desc) in &cols {
                    let (va, vb) = (t.column(c).get(a), t.column(c).get(b));
                    let o = match (va, vb) {
                        (Value::Null, _) | (_, Value::Null) => cmp_values(va, vb),
                        _ if desc => cmp_values(vb, va),
                        _ => cmp_values(va, vb),
                    };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                Ordering::Equal
            });
            assert_eq!(rows, want, "{keys:?}");
            assert_ne!(rows, (0..t.len()).rev().collect::<Vec<_>>(), "{keys:?}");
        }
    }
}
