//! A view's question as text to copy: the curl command of the run list, a Python line (the
//! client of `clients/python`, and pandas reading this very page as CSV) and the SQL over
//! `llm_runs` / `diffusion_runs` that answers the same rows in the same order.

use crate::engine::fields::default_sort_keys;
use crate::engine::{Domain, Filter, RunQuery, RunTable, Stability};

use super::view::number;

/// `s` as one shell word.
pub fn shell_word(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `s` as a Python string literal (a JSON string is one).
pub fn python_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// `s` as an SQL string literal.
fn sql_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `curl` of the run list answering `query` on `origin`.
pub fn curl(origin: &str, domain: Domain, query: &str) -> String {
    let url = format!("{origin}/v1/{}/runs?{query}", domain.as_str());
    format!("curl {}", shell_word(&url))
}

/// The client's collection of the filtered runs, and pandas reading the page shown as CSV.
pub fn python(origin: &str, domain: Domain, q: &RunQuery, query: &str) -> String {
    let class = match domain {
        Domain::Llm => "LLMRuns",
        Domain::Diffusion => "DiffusionRuns",
    };
    let mut chain = format!("{class}.from_server({}", python_str(origin));
    if domain == Domain::Llm && q.stability != Stability::Stable {
        chain.push_str(", stable_only=False");
    }
    chain.push(')');
    if domain == Domain::Llm && q.stability == Stability::Unstable {
        chain.push_str(".unstable()");
    }
    let mut whole = true;
    for f in &q.filters {
        let method = match f.field() {
            "weight_precision" => "precision",
            "run_id" => {
                whole = false;
                continue;
            }
            other => other,
        };
        let args = match f {
            Filter::OneOf { values, .. } => values
                .iter()
                .map(|v| python_str(v))
                .collect::<Vec<_>>()
                .join(", "),
            Filter::NumOneOf { values, .. } => values
                .iter()
                .map(|v| number(*v))
                .collect::<Vec<_>>()
                .join(", "),
            Filter::Range { min, max, .. } => [("min", min), ("max", max)]
                .iter()
                .filter_map(|(n, v)| v.map(|v| format!("{n}={}", number(v))))
                .collect::<Vec<_>>()
                .join(", "),
        };
        chain.push_str(&format!(".{method}({args})"));
    }
    let csv = format!(
        "{origin}/v1/{}/runs?{query}{}format=csv",
        domain.as_str(),
        if query.is_empty() { "" } else { "&" }
    );
    let mut out = String::new();
    if whole {
        out.push_str(&format!(
            "from mlenergy_client import {class}\nruns = {chain}.to_dataframe()\n"
        ));
    }
    out.push_str(&format!(
        "import pandas as pd\npage = pd.read_csv({})",
        python_str(&csv)
    ));
    out
}

/// The SQL of the page: the same columns, filters, order (nulls last, as the run list sorts) and
/// page.
pub fn sql(domain: Domain, table: &RunTable, q: &RunQuery, columns: &[usize]) -> String {
    let names: Vec<&str> = columns.iter().map(|&c| table.fields[c].name).collect();
    let mut out = format!("SELECT {}\nFROM {}_runs", names.join(", "), domain.as_str());
    let mut conds: Vec<String> = Vec::new();
    if domain == Domain::Llm {
        match q.stability {
            Stability::Stable => conds.push("is_stable".into()),
            Stability::Unstable => conds.push("NOT is_stable".into()),
            Stability::All => {}
        }
    }
    for f in &q.filters {
        match f {
            Filter::OneOf { field, values } => conds.push(format!(
                "{field} IN ({})",
                values
                    .iter()
                    .map(|v| sql_str(v))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Filter::NumOneOf { field, values } => conds.push(format!(
                "{field} IN ({})",
                values
                    .iter()
                    .map(|v| number(*v))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Filter::Range { field, min, max } => {
                if let Some(m) = min {
                    conds.push(format!("{field} >= {}", number(*m)));
                }
                if let Some(m) = max {
                    conds.push(format!("{field} <= {}", number(*m)));
                }
            }
        }
    }
    if !conds.is_empty() {
        out.push_str(&format!("\nWHERE {}", conds.join("\n  AND ")));
    }
    let mut order: Vec<String> = q
        .sort
        .iter()
        .map(|k| {
            let dir = if k.descending { "DESC" } else { "ASC" };
            format!("{} {dir} NULLS LAST", k.field)
        })
        .collect();
    for k in default_sort_keys(domain).iter().chain(&["run_id"]) {
        order.push(format!("{k} ASC NULLS LAST"));
    }
    out.push_str(&format!("\nORDER BY {}", order.join(", ")));
    if let Some(l) = q.limit {
        out.push_str(&format!("\nLIMIT {l}"));
    }
    if q.offset > 0 {
        out.push_str(&format!(" OFFSET {}", q.offset));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_literals_are_quoted_for_their_language() {
        assert_eq!(shell_word("a'b"), r"'a'\''b'");
        assert_eq!(python_str("a\"b\\"), r#""a\"b\\""#);
        assert_eq!(sql_str("it's"), "'it''s'");
    }
}
