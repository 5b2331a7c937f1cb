//! The short text beside a tool's structured answer: a few rows as a table, a few numbers as
//! lines. The structured content has everything; the text is what a reader (or a model without
//! structured output) sees first.

use std::fmt::Write;
use std::sync::Arc;

use serde_json::Value;

use crate::service::ask::Cell;

/// Rows shown in a text table: those the door writes at the head of a list (`Encoded::head`).
pub(super) const TABLE_ROWS: usize = crate::service::ask::HEAD_ROWS;
/// Columns shown in a text table: those the door puts in the head of a list.
pub(super) const TABLE_COLUMNS: usize = crate::service::ask::HEAD_COLUMNS;

/// A number as a table shows it: integers whole, others to six significant digits.
pub(super) fn number(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => {
            let _ = write!(out, "{n}");
        }
        Value::Number(n) => write_float(out, n.as_f64().unwrap_or(f64::NAN)),
        Value::Null => out.push('-'),
        Value::String(s) => out.push_str(s),
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// A cell as `number` shows the JSON value the body has for it.
fn write_cell(out: &mut String, cell: &Cell) {
    match cell {
        Cell::Null => out.push('-'),
        Cell::Int(i) => out.push_str(itoa::Buffer::new().format(*i)),
        Cell::Float(x) => write_float(out, *x),
        Cell::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Cell::Text(s) => out.push_str(s),
        Cell::Json(t) => match serde_json::from_str::<Value>(t) {
            Ok(v) => write_value(out, &v),
            Err(_) => out.push_str(t),
        },
    }
}

/// A float to six significant digits, trailing zeros dropped (a whole float shows no point).
fn write_float(out: &mut String, x: f64) {
    if x == 0.0 || !x.is_finite() {
        let _ = write!(out, "{x}");
        return;
    }
    let digits = (5 - x.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let start = out.len();
    let _ = write!(out, "{x:.digits$}");
    if out[start..].contains('.') {
        let kept = out[start..]
            .trim_end_matches('0')
            .trim_end_matches('.')
            .len();
        out.truncate(start + kept);
    }
}

/// Rows as a text table shows them: how many fields the first has, the names of its first
/// `TABLE_COLUMNS` fields that hold no object or array, and those fields' values in each of the
/// first `TABLE_ROWS` rows, row after row.
pub(super) struct Shown<'a> {
    pub(super) fields: usize,
    pub(super) columns: &'a [String],
    pub(super) cells: &'a [Cell],
}

/// A JSON value as a cell of a table.
fn cell_of(v: &Value) -> Cell {
    match v {
        Value::Null => Cell::Null,
        Value::Bool(b) => Cell::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.is_f64()) {
            (Some(i), _) => Cell::Int(i),
            (None, true) => Cell::Float(n.as_f64().unwrap_or(f64::NAN)),
            (None, false) => Cell::Json(Arc::from(n.to_string())),
        },
        Value::String(s) => Cell::Text(Arc::from(s.as_str())),
        other => Cell::Json(Arc::from(other.to_string())),
    }
}

/// Up to `TABLE_ROWS` rows of objects as a pipe table over their first columns, with a line
/// saying how many rows there are in all and where the rest is.
pub(super) fn table(rows: &[Value], total: Option<u64>) -> String {
    let Some(Value::Object(first)) = rows.first() else {
        return table_of(None, rows.len(), total);
    };
    let columns: Vec<String> = first
        .iter()
        .filter(|(_, v)| !v.is_object() && !v.is_array())
        .map(|(k, _)| k.clone())
        .take(TABLE_COLUMNS)
        .collect();
    let cells: Vec<Cell> = rows
        .iter()
        .take(TABLE_ROWS)
        .flat_map(|row| columns.iter().map(move |c| row.get(c.as_str())))
        .map(|v| v.map_or(Cell::Null, cell_of))
        .collect();
    let shown = Shown {
        fields: first.len(),
        columns: &columns,
        cells: &cells,
    };
    table_of(Some(&shown), rows.len(), total)
}

/// `table` of a list of `len` rows shown as `shown` (none: the list is empty, or its first row
/// is not an object).
pub(super) fn table_of(shown: Option<&Shown>, len: usize, total: Option<u64>) -> String {
    let Some(&Shown {
        fields,
        columns,
        cells,
    }) = shown
    else {
        return match total {
            Some(n) if n > 0 => format!("No rows in this page ({n} in all).\n"),
            _ => "No rows.\n".to_string(),
        };
    };
    let shown = len.min(TABLE_ROWS);
    let mut out = String::with_capacity(64 + (shown + 2) * columns.len() * 16);
    out.push_str("| ");
    out.push_str(&columns.join(" | "));
    out.push_str(" |\n|");
    out.push_str(&" --- |".repeat(columns.len()));
    out.push('\n');
    for r in 0..shown {
        out.push_str("| ");
        let row = &cells[r * columns.len()..(r + 1) * columns.len()];
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                out.push_str(" | ");
            }
            write_cell(&mut out, cell);
        }
        out.push_str(" |\n");
    }
    let all = total.unwrap_or(len as u64);
    if (shown as u64) < all || columns.len() < fields {
        let _ = write!(out, "({shown} of {all} rows shown");
        if columns.len() < fields {
            let _ = write!(out, ", {} of {} fields", columns.len(), fields);
        }
        out.push_str("; every row and field is in the structured content)\n");
    }
    out
}

/// An object's scalar fields as `name: value` lines.
pub(super) fn fields(obj: &Value, only: &[&str]) -> String {
    let Value::Object(m) = obj else {
        return obj.to_string();
    };
    m.iter()
        .filter(|(k, v)| {
            (only.is_empty() || only.contains(&k.as_str())) && !v.is_object() && !v.is_array()
        })
        .map(|(k, v)| format!("{k}: {}\n", number(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_to_six_significant_digits() {
        assert_eq!(number(&json!(0.028446538525400376)), "0.0284465");
        assert_eq!(number(&json!(1234.5678)), "1234.57");
        assert_eq!(number(&json!(8)), "8");
        assert_eq!(number(&json!(2.5)), "2.5");
        assert_eq!(number(&json!(null)), "-");
    }

    #[test]
    fn a_table_says_what_it_leaves_out() {
        let rows: Vec<Value> = (0..12)
            .map(|i| json!({"run_id": format!("r{i}"), "energy": i as f64 / 4.0, "nested": {"a": 1}}))
            .collect();
        let t = table(&rows, Some(40));
        assert!(
            t.starts_with("| run_id | energy |\n| --- | --- |\n| r0 | 0 |\n| r1 | 0.25 |\n"),
            "{t}"
        );
        assert!(t.ends_with("(10 of 40 rows shown, 2 of 3 fields; every row and field is in the structured content)\n"), "{t}");
        assert_eq!(table(&[], Some(0)), "No rows.\n");
    }
}
