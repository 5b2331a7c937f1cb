//! The explorer's view: the run-list question a page shows (the filters, `sort`, `limit`,
//! `offset` and `fields` of `/v1/{domain}/runs`, under the same names and aliases) and the
//! explorer's own `deadline` for the best configuration; and the links from one view to another.
//! An empty value is no filter (an HTML form sends every control, the empty ones too).

use crate::engine::{Domain, RunTable};
use crate::http::error::AppError;
use crate::service::ask::{self as ask, Params, Question};

/// Rows a page shows unless `limit` says otherwise; the page sizes the form offers.
pub const DEFAULT_LIMIT: usize = 50;
pub const PAGE_SIZES: &[usize] = &[25, 50, 100, 200];

/// One explorer view.
pub struct View {
    pub domain: Domain,
    /// The run list's parameters under their canonical names, empty values dropped, in the
    /// request's order.
    pub pairs: Vec<(String, String)>,
    /// Largest latency of the best configuration, in the leaderboard latency's unit.
    pub deadline: Option<f64>,
    /// `pairs` parsed by the run list's grammar.
    pub params: Params,
}

/// The parameters an explorer page accepts: the run list's but `format`, and `deadline`.
pub fn allowed(domain: Domain) -> Vec<String> {
    let mut names: Vec<String> = ask::allowed_parameters(domain, Question::List)
        .into_iter()
        .filter(|n| n != "format")
        .collect();
    names.push("deadline".into());
    names
}

impl View {
    pub fn parse(domain: Domain, query: Option<&str>) -> Result<View, AppError> {
        let allowed = allowed(domain);
        let mut pairs = Vec::new();
        let mut deadline = None;
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            if !allowed.iter().any(|a| *a == k) {
                return Err(AppError::UnknownParameter {
                    parameter: k.into_owned(),
                    allowed,
                });
            }
            if v.trim().is_empty() {
                continue;
            }
            if k == "deadline" {
                deadline = Some(non_negative("deadline", &v)?);
                continue;
            }
            let key = ask::canonical(domain, &k).unwrap_or_else(|| k.into_owned());
            pairs.push((key, v.into_owned()));
        }
        let params = Params::parse(domain, Question::List, Some(&encode(&pairs)))?;
        Ok(View {
            domain,
            pairs,
            deadline,
            params,
        })
    }

    /// The items of parameter `key` (comma-separated values split, repeated ones joined).
    pub fn values(&self, key: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == key)
            .flat_map(|(_, v)| v.split(','))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// The one value of `key`, when exactly one is given.
    pub fn one(&self, key: &str) -> Option<&str> {
        match self.values(key).as_slice() {
            [v] => Some(v),
            _ => None,
        }
    }

    /// The filters alone (what the charts, facets and the best configuration take).
    pub fn filter_pairs(&self) -> Vec<(String, String)> {
        self.pairs
            .iter()
            .filter(|(k, _)| ask::filtered_field(self.domain, k).is_some())
            .cloned()
            .collect()
    }

    /// This view's query with `key` set to `value` (removed when `None`); a change of anything
    /// but the page starts again at the first page.
    pub fn with(&self, key: &str, value: Option<&str>) -> String {
        let mut pairs: Vec<(String, String)> = self
            .pairs
            .iter()
            .filter(|(k, _)| k != key && (key == "offset" || k != "offset"))
            .cloned()
            .collect();
        if let Some(v) = value {
            pairs.push((key.to_string(), v.to_string()));
        }
        if let Some(d) = self.deadline.filter(|_| key != "deadline") {
            pairs.push(("deadline".into(), number(d)));
        }
        encode(&pairs)
    }

    /// This view with `value` added to or removed from filter `key` (a facet's link).
    pub fn toggled(&self, key: &str, value: &str) -> String {
        let mut items: Vec<&str> = self.values(key);
        match items.iter().position(|v| *v == value) {
            Some(i) => {
                items.remove(i);
            }
            None => items.push(value),
        }
        let joined = items.join(",");
        self.with(key, (!items.is_empty()).then_some(joined.as_str()))
    }

    /// The fields the table shows: `fields` when given, else the domain's usual columns.
    pub fn columns(&self, table: &RunTable) -> Result<Vec<usize>, AppError> {
        let fields = match self.params.fields(table)? {
            Some(f) => f,
            None => default_columns(self.domain)
                .iter()
                .map(|s| s.to_string())
                .collect(),
        };
        Ok(table.projection(Some(&fields))?)
    }
}

/// The columns of the runs table unless `fields` names others: the configuration, then the
/// leaderboard's energy and latency, throughput, power and the rating.
pub fn default_columns(domain: Domain) -> &'static [&'static str] {
    match domain {
        Domain::Llm => &[
            "task",
            "model_id",
            "gpu_model",
            "num_gpus",
            "max_num_seqs",
            "energy_per_token_joules",
            "median_itl_ms",
            "output_throughput_tokens_per_sec",
            "avg_power_watts",
            "energy_rating",
        ],
        Domain::Diffusion => &[
            "task",
            "model_id",
            "gpu_model",
            "num_gpus",
            "batch_size",
            "energy_per_generation_joules",
            "batch_latency_s",
            "throughput_generations_per_sec",
            "avg_power_watts",
            "energy_rating",
        ],
    }
}

/// `pairs` as a query string.
pub fn encode(pairs: &[(String, String)]) -> String {
    let mut ser = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        ser.append_pair(k, v);
    }
    ser.finish()
}

/// A number as a query value: integral values without a fraction.
pub fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

fn non_negative(name: &str, v: &str) -> Result<f64, AppError> {
    match v.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(AppError::InvalidParameter {
            parameter: name.into(),
            detail: format!("parameter '{name}' must be a number, 0 or more, got '{v}'"),
            allowed: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_values_are_no_filter_and_aliases_become_canonical() {
        let v = View::parse(
            Domain::Llm,
            Some("task=gpqa&model_id=&gpu=B200&batch_min=8&deadline=250"),
        )
        .unwrap();
        assert_eq!(
            v.pairs,
            vec![
                ("task".to_string(), "gpqa".to_string()),
                ("gpu_model".to_string(), "B200".to_string()),
                ("max_num_seqs_min".to_string(), "8".to_string()),
            ]
        );
        assert_eq!(v.deadline, Some(250.0));
        assert_eq!(v.one("task"), Some("gpqa"));
    }

    #[test]
    fn links_keep_the_view_and_start_again_at_the_first_page() {
        let v = View::parse(Domain::Llm, Some("task=gpqa,lm-arena-chat&offset=50")).unwrap();
        assert_eq!(v.toggled("task", "gpqa"), "task=lm-arena-chat");
        assert_eq!(
            v.toggled("gpu_model", "H100"),
            "task=gpqa%2Clm-arena-chat&gpu_model=H100"
        );
        assert_eq!(
            v.with("offset", Some("100")),
            "task=gpqa%2Clm-arena-chat&offset=100"
        );
    }

    #[test]
    fn unknown_parameters_and_formats_are_refused_by_name() {
        let Err(AppError::UnknownParameter { parameter, allowed }) =
            View::parse(Domain::Llm, Some("format=csv"))
        else {
            panic!("format is the API's, not the page's")
        };
        assert_eq!(parameter, "format");
        assert!(allowed.contains(&"deadline".to_string()));
        let Err(AppError::InvalidParameter { parameter, .. }) =
            View::parse(Domain::Diffusion, Some("deadline=-1"))
        else {
            panic!("a negative deadline")
        };
        assert_eq!(parameter, "deadline");
    }
}
