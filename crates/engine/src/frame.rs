//! `Frame`: the small columnar table every answer is made of (a run list, a group table).
//! Columns are plain typed vectors with explicit nulls; encoders (JSON, CSV, NDJSON, Arrow,
//! Parquet) read frames only, so all formats carry the same values by construction.

use std::sync::Arc;

use super::fields::FieldType;

/// Values of one column. `Struct` nests a whole record (argmin/argmax winners) with its own
/// validity. `Json` holds JSON texts: nested as values in JSON answers, a string elsewhere.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnData {
    Str(Vec<Option<Arc<str>>>),
    Json(Vec<Option<Arc<str>>>),
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Struct {
        fields: Vec<FrameColumn>,
        valid: Vec<bool>,
    },
}

/// A borrowed cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Null,
    Str(&'a str),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Value<'_> {
    /// The value as a double, for numeric comparison (`16 == 16.0` as in Python).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(v) => Some(v as f64),
            Value::Float(v) => Some(v),
            _ => None,
        }
    }
}

impl ColumnData {
    pub fn empty(ty: FieldType) -> Self {
        match ty {
            FieldType::String => ColumnData::Str(Vec::new()),
            FieldType::Int64 => ColumnData::Int(Vec::new()),
            FieldType::Double => ColumnData::Float(Vec::new()),
            FieldType::Bool => ColumnData::Bool(Vec::new()),
        }
    }

    /// Whether any value is null.
    pub fn has_null(&self) -> bool {
        match self {
            ColumnData::Str(v) | ColumnData::Json(v) => v.iter().any(Option::is_none),
            ColumnData::Int(v) => v.iter().any(Option::is_none),
            ColumnData::Float(v) => v.iter().any(Option::is_none),
            ColumnData::Bool(v) => v.iter().any(Option::is_none),
            ColumnData::Struct { valid, .. } => valid.iter().any(|v| !v),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ColumnData::Str(v) | ColumnData::Json(v) => v.len(),
            ColumnData::Int(v) => v.len(),
            ColumnData::Float(v) => v.len(),
            ColumnData::Bool(v) => v.len(),
            ColumnData::Struct { valid, .. } => valid.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Scalar cell `row`; struct columns answer `Null` (read their children instead).
    pub fn get(&self, row: usize) -> Value<'_> {
        match self {
            ColumnData::Str(v) | ColumnData::Json(v) => {
                v[row].as_deref().map_or(Value::Null, Value::Str)
            }
            ColumnData::Int(v) => v[row].map_or(Value::Null, Value::Int),
            ColumnData::Float(v) => v[row].map_or(Value::Null, Value::Float),
            ColumnData::Bool(v) => v[row].map_or(Value::Null, Value::Bool),
            ColumnData::Struct { .. } => Value::Null,
        }
    }

    /// Gather rows (indices into `self`); `None` makes a null row.
    pub fn take(&self, rows: &[Option<usize>]) -> ColumnData {
        fn pick<T: Clone>(v: &[Option<T>], rows: &[Option<usize>]) -> Vec<Option<T>> {
            rows.iter().map(|r| r.and_then(|i| v[i].clone())).collect()
        }
        match self {
            ColumnData::Str(v) => ColumnData::Str(pick(v, rows)),
            ColumnData::Json(v) => ColumnData::Json(pick(v, rows)),
            ColumnData::Int(v) => ColumnData::Int(pick(v, rows)),
            ColumnData::Float(v) => ColumnData::Float(pick(v, rows)),
            ColumnData::Bool(v) => ColumnData::Bool(pick(v, rows)),
            ColumnData::Struct { fields, valid } => ColumnData::Struct {
                fields: fields
                    .iter()
                    .map(|c| FrameColumn {
                        name: c.name.clone(),
                        data: c.data.take(rows),
                    })
                    .collect(),
                valid: rows.iter().map(|r| r.is_some_and(|i| valid[i])).collect(),
            },
        }
    }

    /// Append cell `row` of `other` (same variant) to `self`.
    pub fn push_from(&mut self, other: &ColumnData, row: usize) {
        match (self, other) {
            (ColumnData::Str(a), ColumnData::Str(b))
            | (ColumnData::Json(a), ColumnData::Json(b)) => a.push(b[row].clone()),
            (ColumnData::Int(a), ColumnData::Int(b)) => a.push(b[row]),
            (ColumnData::Float(a), ColumnData::Float(b)) => a.push(b[row]),
            (ColumnData::Bool(a), ColumnData::Bool(b)) => a.push(b[row]),
            (a, b) => unreachable!("push_from between {a:?} and {b:?}"),
        }
    }

    /// Append every cell of `other` (same variant) to `self`.
    pub fn extend(&mut self, other: ColumnData) {
        /// An empty column takes the other's vector as it is instead of copying it.
        fn join<T>(a: &mut Vec<T>, b: Vec<T>) {
            if a.is_empty() {
                *a = b;
            } else {
                a.extend(b);
            }
        }
        match (self, other) {
            (ColumnData::Str(a), ColumnData::Str(b))
            | (ColumnData::Json(a), ColumnData::Json(b)) => join(a, b),
            (ColumnData::Int(a), ColumnData::Int(b)) => join(a, b),
            (ColumnData::Float(a), ColumnData::Float(b)) => join(a, b),
            (ColumnData::Bool(a), ColumnData::Bool(b)) => join(a, b),
            (a, b) => unreachable!("extend between {a:?} and {b:?}"),
        }
    }
}

/// A named column.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameColumn {
    pub name: String,
    pub data: ColumnData,
}

/// Columns of equal length.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Frame {
    pub columns: Vec<FrameColumn>,
}

impl Frame {
    pub fn num_rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.data.len())
    }

    pub fn column(&self, name: &str) -> Option<&FrameColumn> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The rows `rows` (in that order) of the columns `cols` (in that order).
    pub fn select(&self, rows: &[usize], cols: &[usize]) -> Frame {
        let rows: Vec<Option<usize>> = rows.iter().copied().map(Some).collect();
        Frame {
            columns: cols
                .iter()
                .map(|&c| FrameColumn {
                    name: self.columns[c].name.clone(),
                    data: self.columns[c].data.take(&rows),
                })
                .collect(),
        }
    }
}
