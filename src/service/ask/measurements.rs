//! The imported measurements' questions (`/v1/measurements/*`): other tools' runs (LLM Energy
//! Measure, IPW) and the dataset's LLM runs in one schema. Lists filter, sort, page and project
//! like the run lists, in the five representations; `repeat-stats` and `compare` answer the
//! statistics. Each question's parameters are declared once (`measurement_specs`, from the
//! measurement tables' catalog): the OpenAPI document, the MCP tools and the parser's list of
//! what a question takes all read them.

use std::sync::Arc;

use crate::engine::frame::Frame;
use crate::engine::query::{Filter, SortKey};
use crate::engine::query::{filter_frame, page_frame, sort_frame};
use crate::peer::schema::{self, Col, ColType};
use crate::service::measurements::{self, Group};
use crate::service::{ServiceError, Snapshot};

use super::answer::{Answer, Encoded, Member, Nullable, Rows, Shape};
use super::declare::{ParamSpec, ValueKind, spec};
use super::door::{AnswerKey, Door, keep};
use super::format::Format;
use super::grammar::{self, count_of, numeric_filters_of};

/// A question of the measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measured<'a> {
    /// The runs, filtered, sorted and paged.
    Runs,
    /// One run by id.
    Run(&'a str),
    /// One of the other tables (`schema::LIST_TABLES`), as the runs.
    Table(&'static str),
    /// Repeat statistics per group of runs.
    RepeatStats,
    /// Two groups of runs compared.
    Compare,
}

impl Measured<'_> {
    /// The path the question is documented at.
    fn path(&self) -> &'static str {
        match self {
            Measured::Runs => "/v1/measurements/runs",
            Measured::Run(_) => "/v1/measurements/runs/{run_id}",
            Measured::Table(_) => "/v1/measurements/{table}",
            Measured::RepeatStats => "/v1/measurements/repeat-stats",
            Measured::Compare => "/v1/measurements/compare",
        }
    }

    /// The last segment of its path (`repeat-stats`), for a question of the whole table.
    pub fn slug(&self) -> &'static str {
        self.path().rsplit('/').next().unwrap_or_default()
    }

    /// The parameters it takes, as declared.
    pub fn specs(&self) -> Vec<ParamSpec> {
        let table = match self {
            Measured::Table(t) => Some(*t),
            _ => None,
        };
        measurement_specs(self.path(), table).unwrap_or_default()
    }
}

/// A measurements question asked: what, with the query's parameters, in which representation
/// (`Format::Json` until the front end has negotiated it), at which path (a next page's link is
/// made on it).
pub struct MeasurementsRequest<'a> {
    pub what: Measured<'a>,
    pairs: Vec<(String, String)>,
    /// The query as given: with the path, what the answer is kept under.
    query: String,
    pub format: Format,
    pub path: String,
}

impl<'a> MeasurementsRequest<'a> {
    /// `what` with the parameters of `query`; one run's question refuses any parameter but
    /// `fields` and `format` at once.
    pub fn parse(
        what: Measured<'a>,
        query: Option<&str>,
        path: String,
    ) -> Result<Self, ServiceError> {
        let query = query.unwrap_or("").to_string();
        let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        if let Measured::Run(_) = what
            && let Some((k, _)) = pairs
                .iter()
                .find(|(k, _)| !matches!(k.as_str(), "fields" | "format"))
        {
            return Err(ServiceError::UnknownParameter {
                parameter: k.clone(),
                allowed: vec!["fields".into(), "format".into()],
            });
        }
        Ok(MeasurementsRequest {
            what,
            pairs,
            query,
            format: Format::Json,
            path,
        })
    }

    /// The `format` parameter (a comparison, JSON only, takes none).
    pub fn format_param(&self) -> Result<Option<&str>, ServiceError> {
        single(&self.pairs, "format")
    }
}

impl Door {
    /// The answer to a measurements question, from the cache when it was answered before for the
    /// same snapshot.
    pub async fn measurements(
        &self,
        req: &MeasurementsRequest<'_>,
    ) -> Result<Arc<Encoded>, ServiceError> {
        let snapshot = self.service().snapshot();
        let key = AnswerKey::of(&[
            &snapshot.generation.to_le_bytes(),
            b"measurements",
            req.format.name().as_bytes(),
            req.path.as_bytes(),
            req.query.as_bytes(),
        ]);
        if let Some(hit) = self.cache().get(&key) {
            return Ok(hit);
        }
        let encoded = match req.what {
            Measured::Runs => list(self, req, &snapshot, "runs", "run_id")?,
            Measured::Table(table) => {
                let key = if table == "sources" || table == "reported_stats" {
                    "source_id"
                } else {
                    "run_id"
                };
                list(self, req, &snapshot, table, key)?
            }
            Measured::Run(run_id) => one(self, req, &snapshot, run_id)?,
            Measured::RepeatStats => repeat_stats(self, req, &snapshot)?,
            Measured::Compare => compare(self, req, &snapshot)?,
        };
        Ok(keep(self.cache(), key, encoded))
    }
}

/// The columns of every measurement table: type, unit, meaning, and for derived columns the
/// formula they are computed by, as `{"tables": {table: [...]}}`.
pub fn fields_document() -> serde_json::Value {
    let mut tables = serde_json::Map::new();
    for (name, cols) in schema::TABLES {
        let list: Vec<serde_json::Value> = cols
            .iter()
            .map(|c| {
                serde_json::json!({
                    "name": c.name,
                    "type": c.ty.name(),
                    "unit": c.unit,
                    "description": c.description,
                    "derived": c.derived.is_some(),
                    "formula": c.derived,
                })
            })
            .collect();
        tables.insert((*name).into(), list.into());
    }
    serde_json::json!({ "tables": tables })
}

fn single<'a>(pairs: &'a [(String, String)], key: &str) -> Result<Option<&'a str>, ServiceError> {
    let mut it = pairs.iter().filter(|(k, _)| k == key);
    let first = it.next().map(|(_, v)| v.as_str());
    if it.next().is_some() {
        return Err(ServiceError::InvalidParameter {
            parameter: key.into(),
            detail: format!("parameter '{key}' takes a single value"),
            allowed: None,
        });
    }
    Ok(first)
}

fn count(pairs: &[(String, String)], key: &str, max: usize) -> Result<Option<usize>, ServiceError> {
    single(pairs, key)?
        .map(|v| count_of(key, v, max as u64, ""))
        .transpose()
}

fn names(cols: &[Col]) -> Vec<String> {
    cols.iter().map(|c| c.name.to_string()).collect()
}

/// The largest `offset` (as for the run lists).
const MAX_OFFSET: usize = super::declare::MAX_OFFSET as usize;

/// A numeric column's filter parameters as given (name and value): exact values, and the bounds.
#[derive(Default)]
struct Numeric {
    exact: Option<(String, Vec<String>)>,
    min: Option<(String, String)>,
    max: Option<(String, String)>,
}

/// What a parameter (without its prefix) names: a column's exact values, or a bound of a numeric
/// one (`_min`, `_max`); `None` if it names no column.
fn named<'a>(cols: &'a [Col], param: &str) -> Option<(&'a Col, Option<bool>)> {
    if let Some(c) = cols
        .iter()
        .find(|c| c.name == param && c.ty != ColType::Json)
    {
        return Some((c, None));
    }
    [("_min", true), ("_max", false)]
        .into_iter()
        .find_map(|(suffix, is_min)| {
            let base = param.strip_suffix(suffix)?;
            let c = cols.iter().find(|c| c.name == base && c.ty.is_numeric())?;
            Some((c, Some(is_min)))
        })
}

/// The filter of a text or boolean column's values (`raw`: the parameter as given).
fn values_filter(c: &Col, raw: &str, value: &str) -> Result<Filter, ServiceError> {
    if c.ty == ColType::Bool {
        // Every item, a blank one too (`is_stable=` names neither).
        if let Some(bad) = value
            .split(',')
            .map(str::trim)
            .find(|v| !matches!(*v, "true" | "false"))
        {
            return Err(ServiceError::InvalidParameter {
                parameter: raw.into(),
                detail: format!("'{raw}' is true or false, not '{bad}'"),
                allowed: Some(vec!["true".into(), "false".into()]),
            });
        }
    }
    Ok(Filter::OneOf {
        field: c.name.into(),
        values: value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
    })
}

/// The query's filters, one list per prefix (a parameter `<prefix><column>`, `_min` or `_max`),
/// refusing any parameter that is neither a filter nor one the question declares. A numeric
/// column's parameters are read together, as the run lists read theirs (`numeric_filters_of`).
fn filters(
    req: &MeasurementsRequest<'_>,
    cols: &[Col],
    prefixes: &[&str],
) -> Result<Vec<Vec<Filter>>, ServiceError> {
    let specs = req.what.specs();
    let mut out = vec![Vec::new(); prefixes.len()];
    // Numeric columns' parameters by (prefix, column), in the order first named.
    let mut numeric: Vec<((usize, &str), Numeric)> = Vec::new();
    'pairs: for (k, v) in &req.pairs {
        for (i, p) in prefixes.iter().enumerate() {
            let Some((c, bound)) = k.strip_prefix(p).and_then(|name| named(cols, name)) else {
                continue;
            };
            if !c.ty.is_numeric() {
                out[i].push(values_filter(c, k, v)?);
                continue 'pairs;
            }
            let at = match numeric.iter().position(|(key, _)| *key == (i, c.name)) {
                Some(at) => at,
                None => {
                    numeric.push(((i, c.name), Numeric::default()));
                    numeric.len() - 1
                }
            };
            let entry = &mut numeric[at].1;
            let given = (k.clone(), v.clone());
            match bound {
                None => entry
                    .exact
                    .get_or_insert_with(|| (k.clone(), Vec::new()))
                    .1
                    .extend(v.split(',').map(str::to_string)),
                Some(true) => once(&mut entry.min, given)?,
                Some(false) => once(&mut entry.max, given)?,
            }
            continue 'pairs;
        }
        if !specs.iter().any(|s| s.name == *k) {
            return Err(ServiceError::UnknownParameter {
                parameter: k.clone(),
                allowed: specs.into_iter().map(|s| s.name).collect(),
            });
        }
    }
    for ((i, field), n) in numeric {
        let exact = n
            .exact
            .as_ref()
            .map(|(name, v)| (name.clone(), v.iter().map(String::as_str).collect()));
        out[i].extend(numeric_filters_of(field, exact, n.min, n.max)?);
    }
    Ok(out)
}

/// A bound given once; a second is refused.
fn once(slot: &mut Option<(String, String)>, given: (String, String)) -> Result<(), ServiceError> {
    if slot.is_some() {
        return Err(ServiceError::InvalidParameter {
            parameter: given.0.clone(),
            detail: format!("parameter '{}' takes a single value", given.0),
            allowed: None,
        });
    }
    *slot = Some(given);
    Ok(())
}

fn sort_keys(pairs: &[(String, String)], cols: &[Col]) -> Result<Vec<SortKey>, ServiceError> {
    let items = pairs
        .iter()
        .filter(|(k, _)| k == "sort")
        .flat_map(|(_, v)| v.split(',').map(str::trim));
    let known = |f: &str| cols.iter().any(|c| c.name == f && c.ty != ColType::Json);
    grammar::sort_keys(items, known, || names(cols))
}

fn projection(
    pairs: &[(String, String)],
    cols: &[Col],
) -> Result<Option<Vec<String>>, ServiceError> {
    let Some(v) = single(pairs, "fields")? else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for f in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !cols.iter().any(|c| c.name == f) {
            return Err(ServiceError::UnknownField {
                parameter: "fields".into(),
                field: f.into(),
                allowed: names(cols),
            });
        }
        out.push(f.to_string());
    }
    Ok(Some(out))
}

fn metric_param(pairs: &[(String, String)]) -> Result<String, ServiceError> {
    let numeric: Vec<String> = schema::RUN_COLUMNS
        .iter()
        .filter(|c| c.ty.is_numeric())
        .map(|c| c.name.to_string())
        .collect();
    let m = single(pairs, "metric")?.unwrap_or("energy_per_output_token_j");
    if !numeric.iter().any(|n| n == m) {
        return Err(ServiceError::InvalidParameter {
            parameter: "metric".into(),
            detail: format!("'{m}' is not a numeric run column"),
            allowed: Some(numeric),
        });
    }
    Ok(m.to_string())
}

fn trim_param(pairs: &[(String, String)]) -> Result<f64, ServiceError> {
    match single(pairs, "trim")? {
        None => Ok(0.0),
        Some(v) => v
            .parse::<f64>()
            .ok()
            .filter(|t| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| ServiceError::InvalidParameter {
                parameter: "trim".into(),
                detail: format!(
                    "'trim' is the fraction dropped from each end, 0 or more (at least two values of a group always stay), not '{v}'"
                ),
                allowed: None,
            }),
    }
}

fn strict_param(pairs: &[(String, String)]) -> Result<bool, ServiceError> {
    match single(pairs, "strict")? {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(v) => Err(ServiceError::InvalidParameter {
            parameter: "strict".into(),
            detail: format!("'strict' is true or false, not '{v}'"),
            allowed: Some(vec!["true".into(), "false".into()]),
        }),
    }
}

fn refuse_if_strict(strict: bool, warnings: &[String]) -> Result<(), ServiceError> {
    if strict && !warnings.is_empty() {
        return Err(ServiceError::InvalidParameter {
            parameter: "strict".into(),
            detail: format!(
                "strict=true and the runs are not comparable: {}",
                warnings.join("; ")
            ),
            allowed: None,
        });
    }
    Ok(())
}

fn describe_json(d: &crate::engine::stats::Describe) -> serde_json::Value {
    serde_json::json!({
        "n": d.n, "mean": d.mean, "std": d.std, "sem": d.sem, "t": d.t,
        "ci95_lo": d.ci95_lo, "ci95_hi": d.ci95_hi, "cv": d.cv, "min": d.min, "max": d.max,
    })
}

/// A filtered, sorted, paged list of one table; JSON has the run lists' envelope with the rows
/// under the table's name.
fn list(
    door: &Door,
    req: &MeasurementsRequest<'_>,
    snapshot: &Snapshot,
    table: &'static str,
    key_col: &str,
) -> Result<Encoded, ServiceError> {
    let cols = schema::columns(table).expect("a known table");
    let pairs = &req.pairs;
    let filters = filters(req, cols, &[""])?.remove(0);
    let sort = sort_keys(pairs, cols)?;
    let fields = projection(pairs, cols)?;
    let limit = count(pairs, "limit", door.max_rows())?;
    let offset = count(pairs, "offset", MAX_OFFSET)?.unwrap_or(0);
    let view = door.service().measurements(snapshot);
    let frame = view.table(table);
    let mut rows = filter_frame(frame, &filters)?;
    sort_frame(frame, &mut rows, &sort)?;
    let total = rows.len();
    let out = page_frame(frame, &rows, offset, limit, fields.as_deref(), key_col)?;
    let next = match limit {
        Some(l) if offset.saturating_add(l) < total => {
            Some(page_link(&req.path, &req.query, offset + l))
        }
        _ => None,
    };
    let answer = Answer {
        shape: Shape::Envelope {
            members: vec![
                ("total", Member::Count(total)),
                ("offset", Member::Count(offset)),
                ("limit", Member::MaybeCount(limit)),
                ("count", Member::Count(out.num_rows())),
                ("next", Member::MaybeText(next.clone())),
            ],
            key: table,
        },
        rows: Rows::Frame(out),
        nullable: Nullable::All,
        total: Some(total),
        next,
        warnings: Vec::new(),
    };
    Ok(answer.encode(req.format, snapshot, None)?)
}

/// One run by id (`{source_id}~{local_id}`), every column or those named by `fields`.
fn one(
    door: &Door,
    req: &MeasurementsRequest<'_>,
    snapshot: &Snapshot,
    run_id: &str,
) -> Result<Encoded, ServiceError> {
    let fields = projection(&req.pairs, schema::RUN_COLUMNS)?;
    let view = door.service().measurements(snapshot);
    let runs = view.table("runs");
    let rows = filter_frame(
        runs,
        &[Filter::OneOf {
            field: "run_id".into(),
            values: vec![run_id.to_string()],
        }],
    )?;
    if rows.is_empty() {
        return Err(ServiceError::UnknownMeasuredRun {
            run_id: run_id.to_string(),
        });
    }
    let out = page_frame(runs, &rows[..1], 0, None, fields.as_deref(), "run_id")?;
    let answer = Answer {
        shape: Shape::Object,
        rows: Rows::Frame(out),
        nullable: Nullable::All,
        total: None,
        next: None,
        warnings: Vec::new(),
    };
    Ok(answer.encode(req.format, snapshot, None)?)
}

/// Repeat statistics per group of `by` (default `source_id,experiment_id`, the repeats of one
/// experiment of one source): JSON `{metric, by, trim, groups, warnings}`, other formats one row
/// per group.
fn repeat_stats(
    door: &Door,
    req: &MeasurementsRequest<'_>,
    snapshot: &Snapshot,
) -> Result<Encoded, ServiceError> {
    let cols = schema::RUN_COLUMNS;
    let pairs = &req.pairs;
    let filters = filters(req, cols, &[""])?.remove(0);
    let metric = metric_param(pairs)?;
    let trim = trim_param(pairs)?;
    let strict = strict_param(pairs)?;
    let mut by: Vec<String> = single(pairs, "by")?
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    if by.is_empty() {
        by = vec!["source_id".into(), "experiment_id".into()];
    }
    for b in &by {
        if !cols.iter().any(|c| c.name == b && c.ty != ColType::Json) {
            return Err(ServiceError::UnknownField {
                parameter: "by".into(),
                field: b.clone(),
                allowed: names(cols),
            });
        }
    }
    let view = door.service().measurements(snapshot);
    let groups: Vec<Group> = measurements::repeat_stats(&view, &filters, &by, &metric, trim)?;
    let mut warnings: Vec<String> = groups
        .iter()
        .flat_map(|g| g.warnings.iter().cloned())
        .collect();
    warnings.sort();
    warnings.dedup();
    refuse_if_strict(strict, &warnings)?;
    let frame: Frame = measurements::group_frame(&groups, &by);
    let list: Vec<serde_json::Value> = groups.iter().map(group_json).collect();
    let doc = serde_json::json!({"metric": metric, "by": by, "trim": trim, "groups": list, "warnings": warnings});
    let answer = Answer {
        shape: Shape::Document(doc),
        rows: Rows::Frame(frame),
        nullable: Nullable::All,
        total: Some(groups.len()),
        next: None,
        warnings: Vec::new(),
    };
    Ok(answer.encode(req.format, snapshot, None)?)
}

/// A group of the repeat statistics in JSON: its statistics, key, what was trimmed or missing,
/// the source's own statistics and the group's warnings.
fn group_json(g: &Group) -> serde_json::Value {
    let mut o = describe_json(&g.stats);
    let key: serde_json::Map<String, serde_json::Value> = g
        .key
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into()))
        .collect();
    o["key"] = key.into();
    o["trimmed"] = g.trimmed.into();
    o["missing"] = g.missing.into();
    o["reported"] = g
        .reported
        .as_ref()
        .map_or(serde_json::Value::Null, |m| serde_json::json!(m));
    o["warnings"] = g.warnings.clone().into();
    o
}

/// Two groups of runs (`a.` and `b.` filters) compared on `metric`: both groups' statistics, the
/// difference with Welch's interval and test, the effect sizes, and the warnings (JSON).
fn compare(
    door: &Door,
    req: &MeasurementsRequest<'_>,
    snapshot: &Snapshot,
) -> Result<Encoded, ServiceError> {
    let cols = schema::RUN_COLUMNS;
    let pairs = &req.pairs;
    let mut fs = filters(req, cols, &["a.", "b."])?;
    let (b, a) = (fs.pop().unwrap_or_default(), fs.pop().unwrap_or_default());
    let metric = metric_param(pairs)?;
    let trim = trim_param(pairs)?;
    let strict = strict_param(pairs)?;
    let view = door.service().measurements(snapshot);
    let c = measurements::compare(&view, &a, &b, &metric, trim)?;
    refuse_if_strict(strict, &c.warnings)?;
    let side = |s: &measurements::Side| {
        let mut o = s
            .stats
            .as_ref()
            .map_or_else(|| serde_json::json!({"n": 0}), describe_json);
        o["runs"] = s.runs.into();
        o["trimmed"] = s.trimmed.into();
        o["missing"] = s.missing.into();
        o
    };
    let mut doc = serde_json::json!({"metric": metric, "trim": trim, "a": side(&c.a), "b": side(&c.b), "warnings": c.warnings, "overlap": c.overlap});
    if let Some(w) = &c.welch {
        for (k, v) in [
            ("difference", Some(w.difference)),
            ("ratio", w.ratio),
            ("se", Some(w.se)),
            ("df", w.df),
            ("t_statistic", w.t_statistic),
            ("p_value", w.p_value),
            ("ci95_lo", w.ci95_lo),
            ("ci95_hi", w.ci95_hi),
            ("cohens_d", w.cohens_d),
            ("hedges_g", w.hedges_g),
        ] {
            doc[k] = v.into();
        }
    }
    Ok(Encoded::new("application/json", doc.to_string()))
}

/// The filter parameters of a table's columns, each name after `prefix`: every column filters
/// by exact values (comma-separated: any of); a numeric one also by `_min` and `_max`.
fn column_specs(cols: &[Col], prefix: &str) -> Vec<ParamSpec> {
    let mut v = Vec::new();
    for c in cols {
        let doc = format!(
            "{} (column {}; comma-separated values: any of)",
            c.description, c.name
        );
        match c.ty {
            ColType::Json => {}
            ColType::Bool => v.push(spec(
                format!("{prefix}{}", c.name),
                doc,
                ValueKind::Choice(vec!["true".into(), "false".into()]),
            )),
            t if t.is_numeric() => {
                v.push(spec(format!("{prefix}{}", c.name), doc, ValueKind::Numbers));
                v.push(spec(
                    format!("{prefix}{}_min", c.name),
                    format!("Lowest {} (inclusive)", c.name),
                    ValueKind::Number,
                ));
                v.push(spec(
                    format!("{prefix}{}_max", c.name),
                    format!("Highest {} (inclusive)", c.name),
                    ValueKind::Number,
                ));
            }
            _ => v.push(spec(format!("{prefix}{}", c.name), doc, ValueKind::Strings)),
        }
    }
    v
}

/// The names of a table's columns a query may sort or group by (all but the JSON ones).
fn orderable(cols: &[Col]) -> Vec<String> {
    cols.iter()
        .filter(|c| c.ty != ColType::Json)
        .map(|c| c.name.to_string())
        .collect()
}

/// `format`: the representations.
fn format_spec() -> ParamSpec {
    spec(
        "format",
        "Representation (else the Accept header)",
        ValueKind::Choice(Format::ALL.iter().map(|f| f.name().to_string()).collect()),
    )
}

/// A list's parameters: paging, sort, projection, format, and the column filters.
fn list_specs(cols: &[Col]) -> Vec<ParamSpec> {
    let mut v = vec![
        spec(
            "limit",
            "Rows per page",
            ValueKind::Count(super::declare::DEFAULT_MAX_ROWS as u64),
        ),
        spec(
            "offset",
            "Rows to skip",
            ValueKind::Count(super::declare::MAX_OFFSET),
        ),
        spec(
            "sort",
            "Columns to sort by, `-` for descending",
            ValueKind::SortKeys(orderable(cols)),
        ),
        spec(
            "fields",
            "Columns to return",
            ValueKind::FieldList(names(cols)),
        ),
        format_spec(),
    ];
    v.extend(column_specs(cols, ""));
    v
}

/// The statistics' own parameters: the metric, the trim and strictness.
fn stats_specs() -> Vec<ParamSpec> {
    let numeric: Vec<String> = schema::RUN_COLUMNS
        .iter()
        .filter(|c| c.ty.is_numeric())
        .map(|c| c.name.to_string())
        .collect();
    vec![
        spec(
            "metric",
            "Numeric run column (default energy_per_output_token_j)",
            ValueKind::NumericField(numeric),
        ),
        spec(
            "trim",
            "Fraction dropped from each end of a group of 4 or more (at most 0.5; at least two values stay)",
            ValueKind::NonNegative,
        ),
        spec(
            "strict",
            "Refuse runs that are not comparable",
            ValueKind::Choice(vec!["true".into(), "false".into()]),
        ),
    ]
}

/// The query parameters of a measurement operation, from the measurement tables' catalog: every
/// column filters (exact values; numeric ones also `_min`/`_max`), with the list parameters or the
/// statistics' own. `table` picks the table of `/v1/measurements/{table}`.
pub fn measurement_specs(path: &str, table: Option<&str>) -> Option<Vec<ParamSpec>> {
    Some(match path {
        "/v1/measurements/runs" => list_specs(schema::RUN_COLUMNS),
        "/v1/measurements/runs/{run_id}" => vec![
            spec(
                "fields",
                "Columns to return",
                ValueKind::FieldList(names(schema::RUN_COLUMNS)),
            ),
            format_spec(),
        ],
        "/v1/measurements/{table}" => list_specs(schema::columns(table?)?),
        "/v1/measurements/repeat-stats" => {
            let mut v = vec![spec(
                "by",
                "Run columns to group by (default source_id,experiment_id)",
                ValueKind::FieldList(orderable(schema::RUN_COLUMNS)),
            )];
            v.extend(stats_specs());
            v.push(format_spec());
            v.extend(column_specs(schema::RUN_COLUMNS, ""));
            v
        }
        "/v1/measurements/compare" => {
            let mut v = stats_specs();
            v.extend(column_specs(schema::RUN_COLUMNS, "a."));
            v.extend(column_specs(schema::RUN_COLUMNS, "b."));
            v
        }
        _ => return None,
    })
}

/// The same request with `offset` replaced.
fn page_link(path: &str, query: &str, offset: usize) -> String {
    let mut ser = form_urlencoded::Serializer::new(String::new());
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        if k != "offset" {
            ser.append_pair(&k, &v);
        }
    }
    ser.append_pair("offset", &offset.to_string());
    format!("{path}?{}", ser.finish())
}
