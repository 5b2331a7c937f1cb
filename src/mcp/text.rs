//! The short text beside a tool's structured answer: a few rows as a table, a few numbers as
//! lines. The structured content has everything; the text is what a reader (or a model without
//! structured output) sees first.

use serde_json::Value;

/// Rows shown in a text table: those the door writes at the head of a list (`Encoded::head`).
pub(super) const TABLE_ROWS: usize = crate::service::ask::HEAD_ROWS;
/// Columns shown in a text table.
const TABLE_COLUMNS: usize = 8;

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

/// Up to `TABLE_ROWS` rows of objects as a pipe table over their first columns, with a line
/// saying how many rows there are in all and where the rest is.
pub(super) fn table(rows: &[Value], total: Option<u64>) -> String {
    table_of(&rows[..rows.len().min(TABLE_ROWS)], rows.len(), total)
}

/// `table` of a list of `len` rows given its first rows, `head` (at least `TABLE_ROWS` of them,
/// or all).
pub(super) fn table_of(head: &[Value], len: usize, total: Option<u64>) -> String {
    let rows = head;
    let Some(Value::Object(first)) = rows.first() else {
        return match total {
            Some(n) if n > 0 => format!("No rows in this page ({n} in all).\n"),
            _ => "No rows.\n".to_string(),
        };
    };
    let columns: Vec<&String> = first
        .iter()
        .filter(|(_, v)| !v.is_object() && !v.is_array())
        .map(|(k, _)| k)
        .take(TABLE_COLUMNS)
        .collect();
    let mut out = String::new();
    out.push_str(&format!(
        "| {} |\n|{}\n",
        columns
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(" | "),
        " --- |".repeat(columns.len())
    ));
    for row in rows.iter().take(TABLE_ROWS) {
        let cells: Vec<String> = columns
            .iter()
            .map(|c| number(row.get(c.as_str()).unwrap_or(&Value::Null)))
            .collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    let shown = len.min(TABLE_ROWS);
    let all = total.unwrap_or(len as u64);
    if (shown as u64) < all || columns.len() < first.len() {
        out.push_str(&format!(
            "({shown} of {all} rows shown{}; every row and field is in the structured content)\n",
            if columns.len() < first.len() {
                format!(", {} of {} fields", columns.len(), first.len())
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
