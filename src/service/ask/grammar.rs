//! The query grammar: turns `?task=gpqa&num_gpus_min=2&sort=-energy_per_token_joules` into
//! engine queries, refusing anything unknown or malformed with the parameter named and the
//! accepted values listed. Repeated or comma-separated values are OR; different filters AND. It
//! reads what `declare` declares; every front end's parameters come through it.

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::frontier::{default_deadline, default_energy, default_latency};
use crate::engine::models::SweepQuery;
use crate::engine::{
    AggFunc, AggSpec, BestQuery, Domain, Filter, FrontierQuery, GroupQuery, RunQuery, RunTable,
    SortKey, Stability,
};

use super::declare::{
    DEFAULT_MAX_SAMPLES, MAX_OFFSET, Question, allowed_parameters, numeric_filters, string_filters,
};
use crate::service::ServiceError;

/// A number written as the OpenAPI document allows (`[+-]?d{1,15}(.d{1,15})?([eE][+-]?d{1,2})?`),
/// finite; `None` otherwise. Exact values of numeric filters are read with it, so that what the
/// document calls invalid is refused.
fn documented_number(v: &str) -> Option<f64> {
    let b = v.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize, max: usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        (1..=max).contains(&(*i - start))
    };
    if !digits(&mut i, 15) {
        return None;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i, 15) {
            return None;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i, 2) {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    v.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// The parameters a question accepts: in the document's order (a refusal lists them so), and as a
/// set (each name of each request is looked up in it).
struct Allowed {
    names: Vec<String>,
    set: std::collections::HashSet<String>,
}

/// `allowed_parameters`, made once per (domain, question): every request checks its names.
fn allowed_once(domain: Domain, question: Question) -> std::sync::Arc<Allowed> {
    use std::collections::HashMap;
    use std::sync::{Arc, LazyLock, RwLock};
    type Made = HashMap<(Domain, Question), Arc<Allowed>>;
    static MADE: LazyLock<RwLock<Made>> = LazyLock::new(Default::default);
    if let Some(a) = MADE.read().expect("not poisoned").get(&(domain, question)) {
        return a.clone();
    }
    let names = allowed_parameters(domain, question);
    let a = Arc::new(Allowed {
        set: names.iter().cloned().collect(),
        names,
    });
    MADE.write()
        .expect("not poisoned")
        .insert((domain, question), a.clone());
    a
}

/// The field a filter parameter (an alias, or a `_min`/`_max` bound) filters on; `None` for
/// parameters that are not filters.
pub fn filtered_field(domain: Domain, param: &str) -> Option<&'static str> {
    if param == "stability" {
        return (domain == Domain::Llm).then_some("is_stable");
    }
    let canon = canonical(domain, param)?;
    let base = canon
        .strip_suffix("_min")
        .or_else(|| canon.strip_suffix("_max"))
        .unwrap_or(&canon);
    string_filters(domain)
        .iter()
        .find(|(p, _, _)| *p == base)
        .map(|(_, field, _)| *field)
        .or_else(|| {
            numeric_filters(domain)
                .iter()
                .find(|(p, _)| *p == base)
                .map(|(p, _)| *p)
        })
}

/// A numeric field's filters from its parameters, each with the name it was given as: exact
/// values (written as the document's number grammar) and a range (`_min`, `_max`: any finite
/// number), both applied when both are given. The one reading of numeric filters, for the run
/// tables and the imported measurements (the run lists refuse exact values with a range first:
/// their document makes a field's filter one object, one form or the other).
pub(crate) fn numeric_filters_of(
    field: &str,
    exact: Option<(String, Vec<&str>)>,
    min: Option<(String, String)>,
    max: Option<(String, String)>,
) -> Result<Vec<Filter>, ServiceError> {
    let refuse = |name: &str, v: &str| ServiceError::InvalidParameter {
        parameter: name.to_string(),
        detail: format!("parameter '{name}' must be a number, got '{v}'"),
        allowed: None,
    };
    let bound = |(name, v): (String, String)| {
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| refuse(&name, &v))
    };
    let mut out = Vec::new();
    if let Some((name, values)) = exact {
        out.push(Filter::NumOneOf {
            field: field.to_string(),
            values: values
                .iter()
                .map(|v| documented_number(v).ok_or_else(|| refuse(&name, v)))
                .collect::<Result<_, _>>()?,
        });
    }
    if min.is_some() || max.is_some() {
        out.push(Filter::Range {
            field: field.to_string(),
            min: min.map(bound).transpose()?,
            max: max.map(bound).transpose()?,
        });
    }
    Ok(out)
}

/// Sort keys from `sort`'s items (`field` ascending, `-field` descending, `+field` ascending),
/// each a field `known` says can be sorted by; else refused naming the fields (`allowed`). The
/// one reading of `sort`, for the run tables and the imported measurements.
pub(crate) fn sort_keys<'a>(
    items: impl IntoIterator<Item = &'a str>,
    known: impl Fn(&str) -> bool,
    allowed: impl FnOnce() -> Vec<String>,
) -> Result<Vec<SortKey>, ServiceError> {
    let mut keys = Vec::new();
    for key in items.into_iter().filter(|k| !k.is_empty()) {
        let (field, descending) = match key.strip_prefix('-') {
            Some(f) => (f, true),
            None => (key.strip_prefix('+').unwrap_or(key), false),
        };
        if !known(field) {
            return Err(ServiceError::UnknownField {
                parameter: "sort".into(),
                field: field.into(),
                allowed: allowed(),
            });
        }
        keys.push(SortKey {
            field: field.into(),
            descending,
        });
    }
    Ok(keys)
}

/// The count `v` of parameter `name` (`limit`, `offset`), at most `max` ("<name> N is above the
/// maximum of <max><unit>"). The one reading of counts, for the run tables and the imported
/// measurements.
pub(crate) fn count_of(name: &str, v: &str, max: u64, unit: &str) -> Result<usize, ServiceError> {
    let refuse = |detail| ServiceError::InvalidParameter {
        parameter: name.to_string(),
        detail,
        allowed: None,
    };
    match v.parse::<usize>() {
        Ok(n) if n as u64 > max => Err(refuse(format!(
            "{name} {n} is above the maximum of {max}{unit}"
        ))),
        Ok(n) => Ok(n),
        Err(_) => Err(refuse(format!(
            "parameter '{name}' must be a non-negative integer, got '{v}'"
        ))),
    }
}

/// Parsed query string: canonical parameter name → values (comma-split, in order).
pub struct Params {
    values: BTreeMap<String, Vec<String>>,
    /// The name each canonical parameter was given as (for messages).
    given_as: BTreeMap<String, String>,
    /// Parameters with an item of white space alone.
    blank: BTreeSet<String>,
}

pub fn canonical(domain: Domain, name: &str) -> Option<String> {
    for (p, _, aliases) in string_filters(domain) {
        if name == *p || aliases.contains(&name) {
            return Some(p.to_string());
        }
    }
    // Compared in place, without building `{filter}{suffix}`: every parameter of every request
    // is looked up here, and most are no filter.
    for (p, aliases) in numeric_filters(domain) {
        for suffix in ["", "_min", "_max"] {
            if let Some(stem) = name.strip_suffix(suffix)
                && (stem == *p || aliases.contains(&stem))
            {
                return Some(format!("{p}{suffix}"));
            }
        }
    }
    None
}

impl Params {
    /// Split and validate parameter names for `question`.
    pub fn parse(
        domain: Domain,
        question: Question,
        query: Option<&str>,
    ) -> Result<Params, ServiceError> {
        let allowed = allowed_once(domain, question);
        let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut given_as = BTreeMap::new();
        let mut blank = BTreeSet::new();
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            if !allowed.set.contains(k.as_ref()) {
                return Err(ServiceError::UnknownParameter {
                    parameter: k.into_owned(),
                    allowed: allowed.names.clone(),
                });
            }
            let key = canonical(domain, &k).unwrap_or_else(|| k.to_string());
            // The name a parameter was first given as, kept only when it is not the canonical one
            // (`name` falls back to the key).
            if k != key.as_str() && !values.contains_key(&key) {
                given_as.insert(key.clone(), k.to_string());
            }
            // An item of white space alone (` `, U+0085) is no empty item: a list parameter
            // refuses it (an empty one is skipped, as the document says).
            if v.split(',').any(|s| !s.is_empty() && s.trim().is_empty()) {
                blank.insert(key.clone());
            }
            let entry: &mut Vec<String> = values.entry(key).or_default();
            entry.extend(v.split(',').map(|s| s.trim().to_string()));
        }
        Ok(Params {
            values,
            given_as,
            blank,
        })
    }

    /// The parameters in their canonical form, written to `out`: every name as given (with the
    /// canonical one it stands for) and its values, in the canonical names' order. Two requests
    /// with the same form ask the same thing and are answered alike, their messages included.
    pub fn canonical(&self, out: &mut Vec<u8>) {
        for (key, values) in &self.values {
            let given = self.given_as.get(key).map_or("", String::as_str);
            out.extend_from_slice(&(values.len() as u64).to_le_bytes());
            for part in [key.as_str(), given]
                .into_iter()
                .chain(values.iter().map(String::as_str))
            {
                out.extend_from_slice(&(part.len() as u64).to_le_bytes());
                out.extend_from_slice(part.as_bytes());
            }
            out.push(u8::from(self.blank.contains(key)));
        }
    }

    /// The link to the same question at `path` with `offset` instead of the one given: the
    /// parameters in their canonical order, each under the name it was given as.
    pub fn link(&self, path: &str, offset: usize) -> String {
        let mut ser = form_urlencoded::Serializer::new(String::new());
        for (key, values) in &self.values {
            if key != "offset" {
                ser.append_pair(&self.name(key), &values.join(","));
            }
        }
        ser.append_pair("offset", &offset.to_string());
        format!("{path}?{}", ser.finish())
    }

    fn name(&self, key: &str) -> String {
        self.given_as
            .get(key)
            .cloned()
            .unwrap_or_else(|| key.to_string())
    }

    /// The one value of a single-valued parameter.
    fn single(&self, key: &str) -> Result<Option<&str>, ServiceError> {
        match self.values.get(key).map(Vec::as_slice) {
            None => Ok(None),
            Some([v]) => Ok(Some(v.as_str())),
            Some(_) => Err(ServiceError::InvalidParameter {
                parameter: self.name(key),
                detail: format!("parameter '{}' takes a single value", self.name(key)),
                allowed: None,
            }),
        }
    }

    /// The value of a single-valued parameter, if given.
    pub fn single_value(&self, key: &str) -> Result<Option<&str>, ServiceError> {
        self.single(key)
    }

    /// The items of a list parameter (empty items skipped), if given; an item of white space
    /// alone is refused.
    pub fn items(&self, key: &str) -> Result<Option<Vec<&str>>, ServiceError> {
        if self.blank.contains(key) {
            return Err(ServiceError::InvalidParameter {
                parameter: self.name(key),
                detail: format!(
                    "parameter '{}' has an item of white space alone",
                    self.name(key)
                ),
                allowed: None,
            });
        }
        Ok(self.values.get(key).map(|v| {
            v.iter()
                .map(String::as_str)
                .filter(|s| !s.is_empty())
                .collect()
        }))
    }

    /// A single number greater than 0 named by `key`, if given.
    pub fn positive(&self, key: &str) -> Result<Option<f64>, ServiceError> {
        let Some(v) = self.single(key)? else {
            return Ok(None);
        };
        let x = self.number(key, v)?;
        if x <= 0.0 {
            return Err(ServiceError::InvalidParameter {
                parameter: self.name(key),
                detail: format!(
                    "parameter '{}' must be greater than 0, got '{v}'",
                    self.name(key)
                ),
                allowed: None,
            });
        }
        Ok(Some(x))
    }

    /// Numbers greater than 0, comma-separated, named by `key`, if given.
    pub fn positives(&self, key: &str) -> Result<Option<Vec<f64>>, ServiceError> {
        let Some(items) = self.items(key)? else {
            return Ok(None);
        };
        let mut out = Vec::new();
        for v in items {
            let x = self.number(key, v)?;
            if x <= 0.0 {
                return Err(ServiceError::InvalidParameter {
                    parameter: self.name(key),
                    detail: format!(
                        "parameter '{}' takes numbers greater than 0, got '{v}'",
                        self.name(key)
                    ),
                    allowed: None,
                });
            }
            out.push(x);
        }
        Ok(Some(out))
    }

    pub fn format(&self) -> Result<Option<&str>, ServiceError> {
        self.single("format")
    }

    /// The dataset revision asked for, if any.
    pub fn revision(&self) -> Result<Option<&str>, ServiceError> {
        self.single("revision")?.map(check_revision).transpose()
    }

    /// The two revisions `changes` compares: `from` (required) and `to` (none: the served one),
    /// not the same name.
    pub fn from_to(&self) -> Result<(&str, Option<&str>), ServiceError> {
        let from = self
            .single("from")?
            .ok_or_else(|| ServiceError::InvalidParameter {
                parameter: "from".into(),
                detail: "from (the revision compared from) is required".into(),
                allowed: None,
            })
            .and_then(check_revision)?;
        let to = self.single("to")?.map(check_revision).transpose()?;
        if to == Some(from) {
            return Err(ServiceError::InvalidParameter {
                parameter: "to".into(),
                detail: format!("from and to are both '{from}': name two revisions to compare"),
                allowed: None,
            });
        }
        Ok((from, to))
    }

    fn number(&self, key: &str, v: &str) -> Result<f64, ServiceError> {
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(ServiceError::InvalidParameter {
                parameter: self.name(key),
                detail: format!("parameter '{}' must be a number, got '{v}'", self.name(key)),
                allowed: None,
            }),
        }
    }

    /// `key`'s count, at most `max` (see `count_of`).
    fn count_at_most(
        &self,
        key: &str,
        max: u64,
        unit: &str,
    ) -> Result<Option<usize>, ServiceError> {
        self.single(key)?
            .map(|v| count_of(&self.name(key), v, max, unit))
            .transpose()
    }

    /// Filters and stability shared by the list and group questions.
    fn filters(&self, domain: Domain) -> Result<(Vec<Filter>, Stability), ServiceError> {
        let mut filters = Vec::new();
        for (p, field, _) in string_filters(domain) {
            if let Some(vals) = self.values.get(*p) {
                filters.push(Filter::OneOf {
                    field: field.to_string(),
                    values: vals.clone(),
                });
            }
        }
        for (p, _) in numeric_filters(domain) {
            // Most requests name few filters: one none of whose parameters (`p`, `p_min`,
            // `p_max`, all sorted from `p` on) is given is passed before its bounds are named.
            let from_p = (std::ops::Bound::Included(*p), std::ops::Bound::Unbounded);
            let mut named = self.values.range::<str, _>(from_p);
            if !named.next().is_some_and(|(k, _)| k.starts_with(*p)) {
                continue;
            }
            let exact = self
                .values
                .get(*p)
                .map(|v| (self.name(p), v.iter().map(String::as_str).collect()));
            let bound = |key: &str| {
                let v = self.single(key)?;
                Ok::<_, ServiceError>(v.map(|v| (self.name(key), v.to_string())))
            };
            let (min, max) = (bound(&format!("{p}_min"))?, bound(&format!("{p}_max"))?);
            if let (Some((name, _)), Some((range, _))) = (&exact, min.as_ref().or(max.as_ref())) {
                return Err(ServiceError::InvalidParameter {
                    parameter: name.clone(),
                    detail: format!(
                        "'{name}' (exact values) cannot be combined with '{range}' (a range); use one or the other"
                    ),
                    allowed: None,
                });
            }
            filters.extend(numeric_filters_of(p, exact, min, max)?);
        }
        let stability = match self.single("stability")? {
            None | Some("stable") => Stability::Stable,
            Some("unstable") => Stability::Unstable,
            Some("all") => Stability::All,
            Some(other) => {
                return Err(ServiceError::InvalidParameter {
                    parameter: "stability".into(),
                    detail: format!("unknown stability '{other}'"),
                    allowed: Some(vec!["stable".into(), "unstable".into(), "all".into()]),
                });
            }
        };
        Ok((filters, stability))
    }

    /// A list of field names, each checked against the table.
    fn field_list(&self, key: &str, table: &RunTable) -> Result<Option<Vec<String>>, ServiceError> {
        let Some(vals) = self.values.get(key) else {
            return Ok(None);
        };
        if self.blank.contains(key) {
            return Err(self.blank_item(key, table.field_names()));
        }
        let names: Vec<String> = vals.iter().filter(|v| !v.is_empty()).cloned().collect();
        for n in &names {
            if table.field_index(n).is_none() {
                return Err(ServiceError::UnknownField {
                    parameter: key.into(),
                    field: n.clone(),
                    allowed: table.field_names(),
                });
            }
        }
        Ok(Some(names))
    }

    /// The refusal of a list parameter with a blank item, naming what it takes.
    fn blank_item(&self, key: &str, allowed: Vec<String>) -> ServiceError {
        let name = self.name(key);
        ServiceError::InvalidParameter {
            parameter: name.clone(),
            detail: format!(
                "parameter '{name}' has an empty item (or one of white space alone): give its items separated by commas"
            ),
            allowed: Some(allowed),
        }
    }

    /// A boolean flag (`true`/`false`/`1`/`0`), false when absent.
    pub fn flag(&self, key: &str) -> Result<bool, ServiceError> {
        match self.single(key)? {
            None => Ok(false),
            Some("true" | "1") => Ok(true),
            Some("false" | "0") => Ok(false),
            Some(other) => Err(ServiceError::InvalidParameter {
                parameter: key.into(),
                detail: format!("parameter '{key}' is a boolean, got '{other}'"),
                allowed: Some(vec!["true".into(), "false".into()]),
            }),
        }
    }

    /// The sweep-fit question: the run filters, `by` (default model_id, task, gpu_model,
    /// num_gpus), the fields `y` (numeric; default per domain), and `predict` (positive).
    pub fn sweep_query(
        &self,
        domain: Domain,
        table: &RunTable,
    ) -> Result<SweepQuery, ServiceError> {
        use crate::engine::models::sweep::{DEFAULT_BY, default_ys};
        let (filters, stability) = self.filters(domain)?;
        let by = self
            .field_list("by", table)?
            .unwrap_or_else(|| DEFAULT_BY.iter().map(|s| s.to_string()).collect());
        let ys = match self.field_list("y", table)? {
            Some(ys) if !ys.is_empty() => ys,
            _ => default_ys(domain).iter().map(|s| s.to_string()).collect(),
        };
        for y in &ys {
            let i = table.field_index(y).expect("checked by field_list");
            if !table.fields[i].ty.is_numeric() {
                return Err(ServiceError::InvalidParameter {
                    parameter: "y".into(),
                    detail: format!("field '{y}' is not numeric"),
                    allowed: Some(table.numeric_field_names()),
                });
            }
        }
        let mut predict = Vec::new();
        for v in self
            .values
            .get("predict")
            .into_iter()
            .flatten()
            .filter(|v| !v.is_empty())
        {
            let b = self.number("predict", v)?;
            if b <= 0.0 {
                return Err(ServiceError::InvalidParameter {
                    parameter: "predict".into(),
                    detail: format!("batch size {v} is not positive"),
                    allowed: None,
                });
            }
            predict.push(b);
        }
        Ok(SweepQuery {
            by,
            ys,
            filters,
            stability,
            predict,
        })
    }

    /// A single numeric field named by `key`, or `default`.
    fn numeric_field(
        &self,
        key: &str,
        table: &RunTable,
        default: &str,
    ) -> Result<String, ServiceError> {
        let Some(name) = self.single(key)? else {
            return Ok(default.to_string());
        };
        match table.field_index(name) {
            Some(i) if table.fields[i].ty.is_numeric() => Ok(name.to_string()),
            Some(_) => Err(ServiceError::InvalidParameter {
                parameter: key.into(),
                detail: format!("field '{name}' is not numeric"),
                allowed: Some(table.numeric_field_names()),
            }),
            None => Err(ServiceError::UnknownField {
                parameter: key.into(),
                field: name.into(),
                allowed: table.numeric_field_names(),
            }),
        }
    }

    /// A number of 0 or more named by `key`, if given.
    fn non_negative(&self, key: &str) -> Result<Option<f64>, ServiceError> {
        let Some(v) = self.single(key)? else {
            return Ok(None);
        };
        let x = self.number(key, v)?;
        if x < 0.0 {
            return Err(ServiceError::InvalidParameter {
                parameter: key.into(),
                detail: format!("parameter '{key}' must be 0 or more, got '{v}'"),
                allowed: None,
            });
        }
        Ok(Some(x))
    }

    /// The Pareto question: the run filters, `x` and `y` (default the leaderboard's latency and
    /// energy fields), `per` (default none).
    pub fn pareto_query(
        &self,
        domain: Domain,
        table: &RunTable,
    ) -> Result<(RunQuery, FrontierQuery), ServiceError> {
        let q = FrontierQuery {
            x: self.numeric_field("x", table, default_latency(domain))?,
            y: self.numeric_field("y", table, default_energy(domain))?,
            per: self.field_list("per", table)?.unwrap_or_default(),
        };
        Ok((self.run_filters(domain)?, q))
    }

    /// The field a sweep chart draws (`y`, default the leaderboard's energy field).
    pub fn chart_y(&self, domain: Domain, table: &RunTable) -> Result<String, ServiceError> {
        self.numeric_field("y", table, default_energy(domain))
    }

    /// The energy-optimal question: the run filters, `latency` and `energy` (default the
    /// leaderboard's), `deadline` (default: the leaderboard's for a single filtered task),
    /// `energy_budget` (default none), `per` (default model_id).
    pub fn best_query(
        &self,
        domain: Domain,
        table: &RunTable,
    ) -> Result<(RunQuery, BestQuery), ServiceError> {
        let latency = self.numeric_field("latency", table, default_latency(domain))?;
        let deadline = match self.non_negative("deadline")? {
            Some(d) => Some(d),
            None => match self.values.get("task").map(Vec::as_slice) {
                Some([task]) => default_deadline(domain, task, &latency),
                _ => None,
            },
        };
        let q = BestQuery {
            energy: self.numeric_field("energy", table, default_energy(domain))?,
            latency,
            deadline,
            energy_budget: self.non_negative("energy_budget")?,
            per: self
                .field_list("per", table)?
                .unwrap_or_else(|| vec!["model_id".to_string()]),
        };
        Ok((self.run_filters(domain)?, q))
    }

    /// `max_samples`: `None` for `all`, else a positive count (default `DEFAULT_MAX_SAMPLES`).
    pub fn max_samples(&self) -> Result<Option<usize>, ServiceError> {
        match self.single("max_samples")? {
            None => Ok(Some(DEFAULT_MAX_SAMPLES)),
            Some("all") => Ok(None),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(ServiceError::InvalidParameter {
                    parameter: "max_samples".into(),
                    detail: format!("max_samples must be a positive integer or 'all', got '{v}'"),
                    allowed: None,
                }),
            },
        }
    }

    /// `seed` (default 0).
    pub fn seed(&self) -> Result<u64, ServiceError> {
        // The document's bound: integers a JSON client (a browser's double) holds exactly.
        Ok(self.count_at_most("seed", MAX_OFFSET, "")?.unwrap_or(0) as u64)
    }

    /// A hint per string filter value that matches no run of `table` (the answer is still what
    /// the filter selects: nothing for that value): `gpu_model 'h100' matches no run; did you
    /// mean 'H100'?`. An empty value, which matches nothing by definition, gets none.
    pub fn filter_warnings(&self, domain: Domain, table: &RunTable) -> Vec<String> {
        let mut out = Vec::new();
        for (p, field, _) in string_filters(domain) {
            let Some(vals) = self.values.get(*p) else {
                continue;
            };
            let Some(col) = table.field_index(field) else {
                continue;
            };
            let data = table.column(col);
            let value = |r: usize| match data.get(r) {
                crate::engine::frame::Value::Str(s) => Some(s),
                _ => None,
            };
            // A value that matches (the usual case) is found by a scan that stops at its first
            // run; the sorted list of known values is made only for one that does not.
            let mut known: Vec<&str> = Vec::new();
            for v in vals {
                if v.is_empty() || (0..table.len()).any(|r| value(r) == Some(v.as_str())) {
                    continue;
                }
                if known.is_empty() {
                    known = (0..table.len()).filter_map(value).collect();
                    known.sort_unstable();
                    known.dedup();
                }
                let name = self.name(p);
                out.push(match suggestion(v, &known) {
                    Some(s) => format!("{name} '{v}' matches no run; did you mean '{s}'?"),
                    None => format!("{name} '{v}' matches no run"),
                });
            }
        }
        out
    }

    /// Filters and stability alone (raw-derived collections).
    pub fn run_filters(&self, domain: Domain) -> Result<RunQuery, ServiceError> {
        let (filters, stability) = self.filters(domain)?;
        Ok(RunQuery {
            filters,
            stability,
            ..Default::default()
        })
    }

    pub fn fields(&self, table: &RunTable) -> Result<Option<Vec<String>>, ServiceError> {
        self.field_list("fields", table)
    }

    pub fn run_query(
        &self,
        domain: Domain,
        table: &RunTable,
        max_rows: usize,
    ) -> Result<RunQuery, ServiceError> {
        let (filters, stability) = self.filters(domain)?;
        let sort = sort_keys(
            self.values
                .get("sort")
                .into_iter()
                .flatten()
                .map(String::as_str),
            |f| table.field_index(f).is_some(),
            || table.field_names(),
        )?;
        let limit = self.count_at_most("limit", max_rows as u64, " rows per response")?;
        Ok(RunQuery {
            filters,
            stability,
            sort,
            offset: self.count_at_most("offset", MAX_OFFSET, "")?.unwrap_or(0),
            limit,
            fields: self.fields(table)?,
        })
    }

    pub fn group_query(
        &self,
        domain: Domain,
        table: &RunTable,
    ) -> Result<GroupQuery, ServiceError> {
        let (filters, stability) = self.filters(domain)?;
        let by = self.field_list("by", table)?.unwrap_or_default();
        // An aggregate list has no empty item: `agg=` and `agg=count,` are refused.
        let agg_blank = self.blank.contains("agg")
            || self
                .values
                .get("agg")
                .is_some_and(|v| v.iter().any(String::is_empty));
        if agg_blank {
            return Err(self.blank_item(
                "agg",
                AggFunc::NAMES.iter().map(|n| n.to_string()).collect(),
            ));
        }
        let mut aggs = Vec::new();
        for a in self
            .values
            .get("agg")
            .into_iter()
            .flatten()
            .filter(|a| !a.is_empty())
        {
            aggs.push(parse_agg(a, table)?);
        }
        Ok(GroupQuery {
            by,
            aggs,
            filters,
            stability,
        })
    }
}

/// `func` or `func(field)`.
fn parse_agg(s: &str, table: &RunTable) -> Result<AggSpec, ServiceError> {
    let (func_name, field) = match s.split_once('(') {
        Some((f, rest)) => match rest.strip_suffix(')') {
            Some(field) => (f.trim(), Some(field.trim().to_string())),
            None => {
                return Err(ServiceError::InvalidParameter {
                    parameter: "agg".into(),
                    detail: format!(
                        "cannot read aggregate '{s}': write func or func(field), e.g. mean(energy_per_token_joules)"
                    ),
                    allowed: None,
                });
            }
        },
        None => (s, None),
    };
    let func: AggFunc = func_name
        .parse()
        .map_err(|_| ServiceError::InvalidParameter {
            parameter: "agg".into(),
            detail: format!("unknown aggregate function '{func_name}'"),
            allowed: Some(AggFunc::NAMES.iter().map(|n| n.to_string()).collect()),
        })?;
    if let Some(f) = &field {
        let Some(i) = table.field_index(f) else {
            return Err(ServiceError::UnknownField {
                parameter: "agg".into(),
                field: f.clone(),
                allowed: table.field_names(),
            });
        };
        if func != AggFunc::Count && !table.fields[i].ty.is_numeric() {
            return Err(ServiceError::InvalidParameter {
                parameter: "agg".into(),
                detail: format!("{func_name}({f}) needs a numeric field"),
                allowed: Some(table.numeric_field_names()),
            });
        }
    }
    Ok(AggSpec { func, field })
}

/// The known value a mistyped one most likely meant: the same but for case, else the closest by
/// edit distance when the distance is small for the value's length (at most 2, and under a third
/// of it).
/// `revision` when it is a revision's name ([`super::declare::REVISION_PATTERN`]), else the
/// refusal naming the parameter.
pub fn check_revision(revision: &str) -> Result<&str, ServiceError> {
    let mut bytes = revision.bytes();
    let first = bytes.next().is_some_and(|b| b.is_ascii_alphanumeric());
    let rest = bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'/' | b'-'));
    if first && rest && revision.len() <= 200 && !revision.contains("..") {
        return Ok(revision);
    }
    Err(ServiceError::InvalidParameter {
        parameter: "revision".into(),
        detail: format!(
            "'{revision}' is not a revision's name: a hub commit, branch or tag, or a local snapshot's name (letters, digits, '.', '_', '/', '-'; at most 200; no '..')"
        ),
        allowed: None,
    })
}

pub fn suggestion<'a>(value: &str, known: &[&'a str]) -> Option<&'a str> {
    let lower = value.to_lowercase();
    if let Some(k) = known.iter().find(|k| k.to_lowercase() == lower) {
        return Some(k);
    }
    let limit = 2.min(value.chars().count().div_ceil(3));
    known
        .iter()
        .map(|k| (strsim::levenshtein(&lower, &k.to_lowercase()), *k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name is a filter's canonical name when it is the filter or one of its aliases, with
    /// `_min`, `_max` or nothing after it (numeric filters); nothing else is.
    #[test]
    fn names_and_aliases_become_canonical() {
        for domain in [Domain::Llm, Domain::Diffusion] {
            for (p, aliases) in numeric_filters(domain) {
                for suffix in ["", "_min", "_max"] {
                    for given in std::iter::once(p).chain(aliases.iter()) {
                        assert_eq!(
                            canonical(domain, &format!("{given}{suffix}")),
                            Some(format!("{p}{suffix}"))
                        );
                    }
                }
            }
            for (p, _, aliases) in string_filters(domain) {
                for given in std::iter::once(p).chain(aliases.iter()) {
                    assert_eq!(canonical(domain, given), Some(p.to_string()));
                }
            }
        }
        assert_eq!(
            canonical(Domain::Llm, "batch_max"),
            Some("max_num_seqs_max".into())
        );
        assert_eq!(
            canonical(Domain::Diffusion, "batch"),
            Some("batch_size".into())
        );
        for other in [
            "",
            "_min",
            "num_gpus_",
            "num_gpus_mi",
            "num_gpus_maxx",
            "xnum_gpus",
            "num_gpu_min",
            "batch_min_max",
            "task_min",
            "gpu_max",
            "limit",
            "sort",
            "max_num_seqs_mid",
        ] {
            assert_eq!(canonical(Domain::Llm, other), None, "{other}");
        }
        assert_eq!(canonical(Domain::Diffusion, "max_num_seqs"), None);
    }

    /// Parameters are checked against the question's set; an unknown one is refused with the
    /// whole list, in the document's order.
    #[test]
    fn unknown_parameters_are_refused_with_the_allowed_list() {
        let p = Params::parse(
            Domain::Llm,
            Question::List,
            Some("batch_min=8&gpu=B200,H100&limit=5"),
        )
        .unwrap();
        assert_eq!(p.single_value("max_num_seqs_min").unwrap(), Some("8"));
        assert_eq!(p.items("gpu_model").unwrap(), Some(vec!["B200", "H100"]));
        assert_eq!(p.name("gpu_model"), "gpu");
        match Params::parse(Domain::Llm, Question::List, Some("limit=5&colour=red")) {
            Err(ServiceError::UnknownParameter { parameter, allowed }) => {
                assert_eq!(parameter, "colour");
                assert_eq!(allowed, allowed_parameters(Domain::Llm, Question::List));
                assert!(allowed.iter().any(|a| a == "max_num_seqs_min"));
            }
            _ => panic!("colour is no parameter of the list"),
        }
    }
}
