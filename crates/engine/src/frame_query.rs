//! Filtering, sorting and paging of any frame by column name, with the run lists' semantics
//! (OR within a filter, AND across filters, inclusive ranges, nulls last, the frame's own order
//! breaking ties). The run tables use their own indexed version ([`super::query`]); this one serves
//! tables whose columns are not a domain's (the imported measurements).

use std::cmp::Ordering;

use super::error::EngineError;
use super::frame::{Frame, Value};
use super::query::{Filter, SortKey};
use super::table::cmp_values;

fn column_index(frame: &Frame, field: &str) -> Result<usize, EngineError> {
    frame
        .columns
        .iter()
        .position(|c| c.name == field)
        .ok_or_else(|| EngineError::InvalidQuery(format!("unknown column '{field}'")))
}

/// Rows (in frame order) that pass every filter.
pub fn filter_rows(frame: &Frame, filters: &[Filter]) -> Result<Vec<usize>, EngineError> {
    let mut compiled = Vec::with_capacity(filters.len());
    for f in filters {
        let (name, _) = match f {
            Filter::OneOf { field, .. }
            | Filter::NumOneOf { field, .. }
            | Filter::Range { field, .. } => (field, ()),
        };
        compiled.push((column_index(frame, name)?, f));
    }
    Ok((0..frame.num_rows())
        .filter(|&r| {
            compiled.iter().all(|(c, f)| {
                let v = frame.columns[*c].data.get(r);
                match f {
                    Filter::OneOf { values, .. } => match v {
                        Value::Str(s) => values.iter().any(|x| x == s),
                        Value::Bool(b) => {
                            values.iter().any(|x| x == if b { "true" } else { "false" })
                        }
                        _ => false,
                    },
                    Filter::NumOneOf { values, .. } => {
                        v.as_f64().is_some_and(|x| values.contains(&x))
                    }
                    Filter::Range { min, max, .. } => v
                        .as_f64()
                        .is_some_and(|x| min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m)),
                }
            })
        })
        .collect())
}

/// Sort rows by the keys (stable: the given order breaks ties).
pub fn sort_rows(frame: &Frame, rows: &mut [usize], keys: &[SortKey]) -> Result<(), EngineError> {
    let cols = keys
        .iter()
        .map(|k| column_index(frame, &k.field).map(|c| (c, k.descending)))
        .collect::<Result<Vec<_>, _>>()?;
    rows.sort_by(|&a, &b| {
        for &(c, desc) in &cols {
            let data = &frame.columns[c].data;
            let (x, y) = (data.get(a), data.get(b));
            // Nulls last in both directions.
            let o = match (x, y) {
                (Value::Null, Value::Null) => Ordering::Equal,
                (Value::Null, _) => Ordering::Greater,
                (_, Value::Null) => Ordering::Less,
                _ if desc => cmp_values(y, x),
                _ => cmp_values(x, y),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    });
    Ok(())
}

/// The page of rows and the projected columns (all when `fields` is `None`; `key` is always first).
pub fn page(
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
            let mut v = vec![column_index(frame, key)?];
            for n in names {
                let c = column_index(frame, n)?;
                if !v.contains(&c) {
                    v.push(c);
                }
            }
            v
        }
    };
    let end = limit.map_or(rows.len(), |l| offset.saturating_add(l).min(rows.len()));
    let slice = if offset >= rows.len() {
        &[][..]
    } else {
        &rows[offset..end]
    };
    Ok(frame.select(slice, &cols))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{ColumnData, FrameColumn};

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
        let rows = filter_rows(
            &f,
            &[Filter::OneOf {
                field: "k".into(),
                values: vec!["p".into()],
            }],
        )
        .unwrap();
        assert_eq!(rows, vec![0, 2]);
        let rows = filter_rows(
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
        sort_rows(
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
        let p = page(&f, &all, 1, Some(2), Some(&["k".to_string()]), "id").unwrap();
        assert_eq!(p.columns.len(), 2);
        assert_eq!(p.columns[0].data.get(0), Value::Str("d"));
        assert_eq!(p.num_rows(), 2);
        assert!(
            filter_rows(
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
