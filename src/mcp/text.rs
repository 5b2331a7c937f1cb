//! The short text beside a tool's structured answer: a few rows as a table, a few numbers as
//! lines. The structured content has everything; the text is what a reader (or a model without
//! structured output) sees first.

use serde_json::Value;

/// Rows shown in a text table: those the door writes at the head of a list (`Encoded::head`).
pub(super) const TABLE_ROWS: usize = crate::service::ask::HEAD_ROWS;
/// Columns shown in a text table: those the door puts in the head of a list.
pub(super) const TABLE_COLUMNS: usize = crate::service::ask::HEAD_COLUMNS;

/// A number as a table shows it: integers whole, others to six significant digits.
pub(super) fn number(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x == 0.0 || !x.is_finite() {
                return format!("{x}");
            }
            let digits = (5 - x.abs().log10().floor() as i32).clamp(0, 12) as usize;
            let s = format!("{x:.digits$}");
            if s.contains('.') {
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                s
            }
        }
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Rows as a text table shows them: how many fields the first has, the names of its first
/// `TABLE_COLUMNS` fields that hold no object or array, and those fields' values in each of the
/// first `TABLE_ROWS` rows.
pub(super) struct Shown {
    pub(super) fields: usize,
    pub(super) columns: Vec<String>,
    pub(super) cells: Vec<Vec<Value>>,
}

/// Up to `TABLE_ROWS` rows of objects as a pipe table over their first columns, with a line
/// saying how many rows there are in all and where the rest is.
pub(super) fn table(rows: &[Value], total: Option<u64>) -> String {
    let shown = match rows.first() {
        Some(Value::Object(first)) => {
            let columns: Vec<String> = first
                .iter()
                .filter(|(_, v)| !v.is_object() && !v.is_array())
                .map(|(k, _)| k.clone())
                .take(TABLE_COLUMNS)
                .collect();
            let cells = rows
                .iter()
                .take(TABLE_ROWS)
                .map(|row| {
                    columns
                        .iter()
                        .map(|c| row.get(c.as_str()).cloned().unwrap_or(Value::Null))
                        .collect()
                })
                .collect();
            Some(Shown {
                fields: first.len(),
                columns,
                cells,
            })
        }
        _ => None,
    };
    table_of(shown.as_ref(), rows.len(), total)
}

/// `table` of a list of `len` rows shown as `shown` (none: the list is empty, or its first row
/// is not an object).
pub(super) fn table_of(shown: Option<&Shown>, len: usize, total: Option<u64>) -> String {
    let Some(Shown {
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
    let mut out = String::new();
    out.push_str(&format!(
        "| {} |\n|{}\n",
        columns.join(" | "),
        " --- |".repeat(columns.len())
    ));
    for row in cells {
        let cells: Vec<String> = row.iter().map(number).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    let shown = len.min(TABLE_ROWS);
    let all = total.unwrap_or(len as u64);
    if (shown as u64) < all || columns.len() < *fields {
        out.push_str(&format!(
            "({shown} of {all} rows shown{}; every row and field is in the structured content)\n",
            if columns.len() < *fields {
                format!(", {} of {} fields", columns.len(), fields)
            } else {
                String::new()
            }
        ));
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
