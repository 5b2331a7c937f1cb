//! Row selection with the toolkit's filter semantics (docs/toolkit.md §10.2): exact-set
//! membership per field (OR within a filter, AND across filters), inclusive numeric ranges,
//! stability, then sorting (nulls last, the table's own order breaking ties), paging and
//! projection. One engine for a domain's run table (its fields checked against the domain's) and
//! for any frame by column name (the imported measurements' tables).

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

impl Filter {
    /// The field the filter is on.
    pub fn field(&self) -> &str {
        match self {
            Filter::OneOf { field, .. }
            | Filter::NumOneOf { field, .. }
            | Filter::Range { field, .. } => field,
        }
    }
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

/// A filter on the column at a position.
enum Compiled {
    OneOf(usize, Vec<String>),
    NumOneOf(usize, Vec<f64>),
    Range(usize, Option<f64>, Option<f64>),
}

impl Compiled {
    /// `f` on the column at `c`.
    fn new(f: &Filter, c: usize) -> Compiled {
        match f {
            Filter::OneOf { values, .. } => Compiled::OneOf(c, values.clone()),
            Filter::NumOneOf { values, .. } => Compiled::NumOneOf(c, values.clone()),
            Filter::Range { min, max, .. } => Compiled::Range(c, *min, *max),
        }
    }

    /// Whether row `row` of `t` passes (a boolean matches the texts `true` and `false`).
    fn keep(&self, t: &Frame, row: usize) -> bool {
        match self {
            Compiled::OneOf(c, vals) => match t.columns[*c].data.get(row) {
                Value::Str(s) => vals.iter().any(|v| v == s),
                Value::Bool(b) => vals.iter().any(|v| v == if b { "true" } else { "false" }),
                _ => false,
            },
            Compiled::NumOneOf(c, vals) => t.columns[*c]
                .data
                .get(row)
                .as_f64()
                .is_some_and(|x| vals.contains(&x)),
            Compiled::Range(c, min, max) => t.columns[*c]
                .data
                .get(row)
                .as_f64()
                .is_some_and(|x| min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m)),
        }
    }

    /// Keep the `rows` this filter keeps: a column's values read as its own type over all the
    /// rows (`keep`, a row at a time through `Value`, was most of a fresh run query's filtering).
    fn retain(&self, t: &Frame, rows: &mut Vec<usize>) {
        let column = |c: &usize| &t.columns[*c].data;
        let within = |x: f64, min: &Option<f64>, max: &Option<f64>| {
            min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m)
        };
        match self {
            Compiled::OneOf(c, vals) => {
                if let ColumnData::Str(v) = column(c) {
                    return rows
                        .retain(|&r| v[r].as_deref().is_some_and(|s| vals.iter().any(|x| x == s)));
                }
            }
            Compiled::NumOneOf(c, vals) => match column(c) {
                ColumnData::Int(v) => {
                    return rows.retain(|&r| v[r].is_some_and(|x| vals.contains(&(x as f64))));
                }
                ColumnData::Float(v) => {
                    return rows.retain(|&r| v[r].is_some_and(|x| vals.contains(&x)));
                }
                _ => {}
            },
            Compiled::Range(c, min, max) => match column(c) {
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
    /// `f` on its field, which must be one of the domain's (numeric, for a number filter).
    fn compile(&self, f: &Filter) -> Result<Compiled, EngineError> {
        let c = match f {
            Filter::OneOf { field, .. } => self.require_field(field)?,
            Filter::NumOneOf { field, .. } | Filter::Range { field, .. } => {
                self.require_numeric(field)?
            }
        };
        Ok(Compiled::new(f, c))
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
            f.retain(&self.frame, &mut rows);
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
            f.retain(&self.frame, &mut rows);
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
        sort_by_columns(&self.frame, rows, &cols);
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

/// Stable sort of `rows` of `frame` by the columns at these positions, each descending or not.
fn sort_by_columns(frame: &Frame, rows: &mut [usize], cols: &[(usize, bool)]) {
    let keys: Vec<(SortColumn<'_>, bool)> = cols
        .iter()
        .map(|&(c, desc)| (SortColumn::of(&frame.columns[c].data), desc))
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
}

/// The position of the column `name` of a frame whose columns are not a domain's.
fn column_index(frame: &Frame, name: &str) -> Result<usize, EngineError> {
    frame
        .columns
        .iter()
        .position(|c| c.name == name)
        .ok_or_else(|| EngineError::InvalidQuery(format!("unknown column '{name}'")))
}

/// Rows of `frame` (in its order) that pass every filter, its columns found by name.
pub fn filter_frame(frame: &Frame, filters: &[Filter]) -> Result<Vec<usize>, EngineError> {
    let compiled = filters
        .iter()
        .map(|f| Ok(Compiled::new(f, column_index(frame, f.field())?)))
        .collect::<Result<Vec<_>, EngineError>>()?;
    let mut rows: Vec<usize> = (0..frame.num_rows()).collect();
    for f in &compiled {
        f.retain(frame, &mut rows);
    }
    Ok(rows)
}

/// Stable sort of `rows` of `frame` by the keys (nulls last in either direction), its columns
/// found by name.
pub fn sort_frame(frame: &Frame, rows: &mut [usize], keys: &[SortKey]) -> Result<(), EngineError> {
    let cols = keys
        .iter()
        .map(|k| Ok((column_index(frame, &k.field)?, k.descending)))
        .collect::<Result<Vec<_>, EngineError>>()?;
    sort_by_columns(frame, rows, &cols);
    Ok(())
}

/// The page `offset`, `limit` of `rows` of `frame`, with every column or the named ones (`key`
/// always first).
pub fn page_frame(
    frame: &Frame,
    rows: &[usize],
    offset: usize,
    limit: Option<usize>,
    fields: Option<&[String]>,
    key: &str,
) -> Result<Frame, EngineError> {
    let cols: Vec<usize> = match fields {
        None => (0..frame.columns.len()).collect(),
        Some(names) => {
            let mut cols = vec![column_index(frame, key)?];
            for n in names {
                let c = column_index(frame, n)?;
                if !cols.contains(&c) {
                    cols.push(c);
                }
            }
            cols
        }
    };
    let start = offset.min(rows.len());
    let end = limit.map_or(rows.len(), |l| start.saturating_add(l).min(rows.len()));
    Ok(frame.select(&rows[start..end], &cols))
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
                    .filter(|&r| compiled.iter().all(|f| f.keep(&t.frame, r)))
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

#[cfg(test)]
mod frame_tests {
    use super::*;
    use crate::frame::{ColumnData, FrameColumn};

    /// The frame version of the engine: any frame's columns by name (the imported measurements).

    fn frame() -> Frame {
        Frame {
            columns: vec![
                FrameColumn {
                    name: "id".into(),
                    data: ColumnData::Str(vec![
                        Some("a".into()),
                        Some("b".into()),
                        Some("c".into()),
                        Some("d".into()),
                    ]),
                },
                FrameColumn {
                    name: "x".into(),
                    data: ColumnData::Float(vec![Some(2.0), None, Some(1.0), Some(2.0)]),
                },
                FrameColumn {
                    name: "k".into(),
                    data: ColumnData::Str(vec![
                        Some("p".into()),
                        Some("q".into()),
                        Some("p".into()),
                        None,
                    ]),
                },
            ],
        }
    }

    #[test]
    fn filters_sort_and_page() {
        let f = frame();
        let rows = filter_frame(
            &f,
            &[Filter::OneOf {
                field: "k".into(),
                values: vec!["p".into()],
            }],
        )
        .unwrap();
        assert_eq!(rows, vec![0, 2]);
        let rows = filter_frame(
            &f,
            &[Filter::Range {
                field: "x".into(),
                min: Some(1.5),
                max: None,
            }],
        )
        .unwrap();
        assert_eq!(rows, vec![0, 3]);
        let mut all: Vec<usize> = (0..4).collect();
        sort_frame(
            &f,
            &mut all,
            &[SortKey {
                field: "x".into(),
                descending: true,
            }],
        )
        .unwrap();
        assert_eq!(
            all,
            vec![0, 3, 2, 1],
            "descending, ties in frame order, null last"
        );
        let p = page_frame(&f, &all, 1, Some(2), Some(&["k".to_string()]), "id").unwrap();
        assert_eq!(p.columns.len(), 2);
        assert_eq!(p.columns[0].data.get(0), Value::Str("d"));
        assert_eq!(p.num_rows(), 2);
        assert!(
            filter_frame(
                &f,
                &[Filter::OneOf {
                    field: "nope".into(),
                    values: vec![]
                }]
            )
            .is_err()
        );
    }
}
