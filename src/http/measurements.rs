//! `/v1/measurements/*`: other tools' imported measurements (LLM Energy Measure, IPW) and the
//! dataset's LLM runs in one schema. Lists filter, sort, page and project like `/runs`, in the
//! five formats; `repeat-stats` and `compare` answer the statistics.

use axum::extract::{OriginalUri, Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::http::header;
use axum::response::Response;

use super::answer::{Encoded, cached, respond};
use super::error::AppError;
use super::negotiate::{Format, negotiate};
use super::state::AppState;
use crate::engine::frame::Frame;
use crate::engine::frame_query::{filter_rows, page, sort_rows};
use crate::engine::query::{Filter, SortKey};
use crate::peer::schema::{self, Col, ColType};
use crate::service::encode;
use crate::service::measurements::{self, Group};

use crate::peer::schema::LIST_TABLES;

/// The largest `offset` (as for the run lists).
const MAX_OFFSET: usize = crate::service::ask::MAX_OFFSET as usize;

fn pairs(query: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

fn single<'a>(pairs: &'a [(String, String)], key: &str) -> Result<Option<&'a str>, AppError> {
    let mut it = pairs.iter().filter(|(k, _)| k == key);
    let first = it.next().map(|(_, v)| v.as_str());
    if it.next().is_some() {
        return Err(AppError::InvalidParameter {
            parameter: key.into(),
            detail: format!("'{key}' is given more than once"),
            allowed: None,
        });
    }
    Ok(first)
}

fn count(pairs: &[(String, String)], key: &str, max: usize) -> Result<Option<usize>, AppError> {
    match single(pairs, key)? {
        None => Ok(None),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= max)
            .map(Some)
            .ok_or_else(|| AppError::InvalidParameter {
                parameter: key.into(),
                detail: format!("'{key}' must be a whole number from 0 to {max}, not '{v}'"),
                allowed: None,
            }),
    }
}

fn names(cols: &[Col]) -> Vec<String> {
    cols.iter().map(|c| c.name.to_string()).collect()
}

/// The filters parameter names a table takes: every string or bool column (exact values, comma
/// separated or repeated), every numeric column (exact, or `_min`/`_max`).
pub fn filter_names(cols: &[Col], prefix: &str) -> Vec<String> {
    let mut v = Vec::new();
    for c in cols {
        match c.ty {
            ColType::Json => {}
            t if t.is_numeric() => {
                v.push(format!("{prefix}{}", c.name));
                v.push(format!("{prefix}{}_min", c.name));
                v.push(format!("{prefix}{}_max", c.name));
            }
            _ => v.push(format!("{prefix}{}", c.name)),
        }
    }
    v
}

/// The filter a parameter (without its prefix) stands for, or `None` if it names no column.
fn filter_of(
    cols: &[Col],
    param: &str,
    raw: &str,
    value: &str,
) -> Result<Option<Filter>, AppError> {
    let refuse = |v: &str| AppError::InvalidParameter {
        parameter: raw.into(),
        detail: format!("'{raw}' takes numbers, not '{v}'"),
        allowed: None,
    };
    // Exact values are written as the document's number grammar; a range bound is any finite number.
    let number = |v: &str| crate::service::ask::documented_number(v).ok_or_else(|| refuse(v));
    let bound = |v: &str| {
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| refuse(v))
    };
    let values: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    if let Some(c) = cols
        .iter()
        .find(|c| c.name == param && c.ty != ColType::Json)
    {
        return Ok(Some(match c.ty {
            t if t.is_numeric() => Filter::NumOneOf {
                field: c.name.into(),
                values: value.split(',').map(number).collect::<Result<_, _>>()?,
            },
            ColType::Bool => {
                // Every item, a blank one too (`is_stable=` names neither).
                if let Some(bad) = value
                    .split(',')
                    .map(str::trim)
                    .find(|v| !matches!(*v, "true" | "false"))
                {
                    return Err(AppError::InvalidParameter {
                        parameter: raw.into(),
                        detail: format!("'{raw}' is true or false, not '{bad}'"),
                        allowed: Some(vec!["true".into(), "false".into()]),
                    });
                }
                Filter::OneOf {
                    field: c.name.into(),
                    values,
                }
            }
            _ => Filter::OneOf {
                field: c.name.into(),
                values,
            },
        }));
    }
    for (suffix, is_min) in [("_min", true), ("_max", false)] {
        if let Some(base) = param.strip_suffix(suffix)
            && let Some(c) = cols.iter().find(|c| c.name == base && c.ty.is_numeric())
        {
            let x = bound(value)?;
            return Ok(Some(Filter::Range {
                field: c.name.into(),
                min: is_min.then_some(x),
                max: (!is_min).then_some(x),
            }));
        }
    }
    Ok(None)
}

/// Split the query into filters (prefixed by `prefix`) and the other parameters, refusing any
/// parameter that is neither one of `reserved` nor a filter.
fn filters(
    pairs: &[(String, String)],
    cols: &[Col],
    reserved: &[&str],
    prefixes: &[&str],
) -> Result<Vec<Vec<Filter>>, AppError> {
    let mut out = vec![Vec::new(); prefixes.len()];
    'pairs: for (k, v) in pairs {
        if reserved.contains(&k.as_str()) {
            continue;
        }
        for (i, p) in prefixes.iter().enumerate() {
            if let Some(name) = k.strip_prefix(p)
                && let Some(f) = filter_of(cols, name, k, v)?
            {
                out[i].push(f);
                continue 'pairs;
            }
        }
        let mut allowed: Vec<String> = reserved.iter().map(|s| s.to_string()).collect();
        for p in prefixes {
            allowed.extend(filter_names(cols, p));
        }
        return Err(AppError::UnknownParameter {
            parameter: k.clone(),
            allowed,
        });
    }
    Ok(out)
}

fn sort_keys(pairs: &[(String, String)], cols: &[Col]) -> Result<Vec<SortKey>, AppError> {
    let mut keys = Vec::new();
    for (_, v) in pairs.iter().filter(|(k, _)| k == "sort") {
        for key in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (field, descending) = match key.strip_prefix('-') {
                Some(f) => (f, true),
                None => (key.strip_prefix('+').unwrap_or(key), false),
            };
            if !cols
                .iter()
                .any(|c| c.name == field && c.ty != ColType::Json)
            {
                return Err(AppError::UnknownField {
                    parameter: "sort".into(),
                    field: field.into(),
                    allowed: names(cols),
                });
            }
            keys.push(SortKey {
                field: field.into(),
                descending,
            });
        }
    }
    Ok(keys)
}

fn projection(pairs: &[(String, String)], cols: &[Col]) -> Result<Option<Vec<String>>, AppError> {
    let Some(v) = single(pairs, "fields")? else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for f in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !cols.iter().any(|c| c.name == f) {
            return Err(AppError::UnknownField {
                parameter: "fields".into(),
                field: f.into(),
                allowed: names(cols),
            });
        }
        out.push(f.to_string());
    }
    Ok(Some(out))
}

fn format_of(pairs: &[(String, String)], headers: &HeaderMap) -> Result<Format, AppError> {
    negotiate(
        single(pairs, "format")?,
        headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()),
    )
}

pub const LIST_PARAMS: &[&str] = &["limit", "offset", "sort", "fields", "format"];

/// A filtered, sorted, paged list of one table in the asked format; JSON has the run lists'
/// envelope with the rows under `key`.
fn list(
    state: &AppState,
    uri: &axum::http::Uri,
    query: Option<&str>,
    headers: &HeaderMap,
    table: &'static str,
    key_col: &str,
) -> Result<Response, AppError> {
    let cols = schema::columns(table).expect("a known table");
    let pairs = pairs(query);
    let format = format_of(&pairs, headers)?;
    let filters = filters(&pairs, cols, LIST_PARAMS, &[""])?.remove(0);
    let sort = sort_keys(&pairs, cols)?;
    let fields = projection(&pairs, cols)?;
    let limit = count(&pairs, "limit", state.limits.max_rows)?;
    let offset = count(&pairs, "offset", MAX_OFFSET)?.unwrap_or(0);
    let snapshot = state.service.snapshot();
    let path = uri.path().to_string();
    let encoded = cached(&state.cache, &snapshot, uri, format, || {
        let view = state.service.measurements(&snapshot);
        let frame = view.table(table);
        let mut rows = filter_rows(frame, &filters)?;
        sort_rows(frame, &mut rows, &sort)?;
        let total = rows.len();
        let out = page(frame, &rows, offset, limit, fields.as_deref(), key_col)?;
        let next = match limit {
            Some(l) if offset.saturating_add(l) < total => {
                Some(page_link(&path, query, offset + l))
            }
            _ => None,
        };
        let body = encode::encode_frame(&out, format, &|_| true, |buf, f| {
            buf.extend_from_slice(
                format!("{{\"total\":{total},\"offset\":{offset},\"limit\":").as_bytes(),
            );
            match limit {
                Some(l) => buf.extend_from_slice(l.to_string().as_bytes()),
                None => buf.extend_from_slice(b"null"),
            }
            buf.extend_from_slice(format!(",\"count\":{},\"next\":", f.num_rows()).as_bytes());
            match &next {
                Some(n) => encode::json_str(buf, n),
                None => buf.extend_from_slice(b"null"),
            }
            buf.extend_from_slice(b",");
            encode::json_str(buf, table);
            buf.push(b':');
            encode::json_array(buf, f);
            buf.push(b'}');
        })?;
        Ok(Encoded {
            total: Some(total),
            next,
            ..Encoded::new(format.content_type(), body)
        })
    })?;
    Ok(respond(&encoded))
}

/// List measurement runs: imported runs and the dataset's LLM runs in one schema.
///
/// Every string column filters by exact values (comma-separated or repeated: OR), e.g.
/// `source_kind`, `model`, `hardware`, `task`, `energy_scope`, `window`, `attribution`,
/// `batch_semantics`; every numeric column by exact values or an inclusive `_min`/`_max` range.
/// Rows come in import order (the dataset's runs first) unless `sort` says otherwise.
#[utoipa::path(
    get,
    path = "/v1/measurements/runs",
    tag = "measurements",
    responses(
        (status = 200, description = "Matching runs (JSON envelope with `runs`; other formats carry the rows)",
            headers(("X-Total-Count" = usize, description = "Matching rows before paging")),
            content(
                (serde_json::Value = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::QueryProblems,
    )
)]
pub async fn list_runs(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    list(&state, &uri, query.as_deref(), &headers, "runs", "run_id")
}

/// One measurement run by id (`{source_id}~{local_id}`), every column or those named by `fields`.
#[utoipa::path(
    get,
    path = "/v1/measurements/runs/{run_id}",
    tag = "measurements",
    params(
        ("run_id" = String, Path, description = "Run id, e.g. lem_v1-1a2b3c4d~0042_c1 or mlenergy_v3~gpqa~Qwen--Qwen3-14B~B200~g1~b8"),
    ),
    responses(
        (status = 200, description = "The run (a JSON object; other formats hold one row)",
            content(
                (serde_json::Value = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    )
)]
pub async fn get_run(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let cols = schema::RUN_COLUMNS;
    let pairs = pairs(query.as_deref());
    if let Some((k, _)) = pairs
        .iter()
        .find(|(k, _)| !matches!(k.as_str(), "fields" | "format"))
    {
        return Err(AppError::UnknownParameter {
            parameter: k.clone(),
            allowed: vec!["fields".into(), "format".into()],
        });
    }
    let format = format_of(&pairs, &headers)?;
    let fields = projection(&pairs, cols)?;
    let snapshot = state.service.snapshot();
    let view = state.service.measurements(&snapshot);
    let runs = view.table("runs");
    let rows = filter_rows(
        runs,
        &[Filter::OneOf {
            field: "run_id".into(),
            values: vec![run_id.clone()],
        }],
    )?;
    if rows.is_empty() {
        return Err(AppError::UnknownRun {
            domain: "measurements".into(),
            run_id,
        });
    }
    let encoded = cached(&state.cache, &snapshot, &uri, format, || {
        let out = page(runs, &rows[..1], 0, None, fields.as_deref(), "run_id")?;
        let body = encode::encode_frame(&out, format, &|_| true, |buf, f| {
            encode::json_object(buf, f, 0)
        })?;
        Ok(Encoded::new(format.content_type(), body))
    })?;
    Ok(respond(&encoded))
}

/// List one of the measurement tables: `sources` (what was imported, from where, with the files
/// that could not be read), `requests`, `turns`, `tool_calls`, `timeseries`, `latency_samples`,
/// `evaluations`, `run_metrics` (values as the sources reported them) or `reported_stats`.
///
/// Filters, sort, paging and projection as for `/v1/measurements/runs` (e.g. `run_id=...`).
#[utoipa::path(
    get,
    path = "/v1/measurements/{table}",
    tag = "measurements",
    params(
        ("table" = String, Path, description = "sources, requests, turns, tool_calls, timeseries, latency_samples, evaluations, run_metrics or reported_stats"),
    ),
    responses(
        (status = 200, description = "Matching rows (JSON envelope with the rows under the table's name)",
            headers(("X-Total-Count" = usize, description = "Matching rows before paging")),
            content(
                (serde_json::Value = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    )
)]
pub async fn list_table(
    State(state): State<AppState>,
    Path(table): Path<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let Some(&table) = LIST_TABLES.iter().find(|t| **t == table) else {
        return Err(AppError::NoRoute(format!(
            "/v1/measurements/{table}: no such table; the tables are runs, {}",
            LIST_TABLES.join(", ")
        )));
    };
    let key = if table == "sources" || table == "reported_stats" {
        "source_id"
    } else {
        "run_id"
    };
    list(&state, &uri, query.as_deref(), &headers, table, key)
}

/// The columns of every measurement table: type, unit, meaning, and for derived columns the
/// formula they are computed by.
#[utoipa::path(
    get,
    path = "/v1/measurements/fields",
    tag = "measurements",
    responses((status = 200, description = "`{\"tables\": {table: [{name, type, unit, description, derived, formula}]}}`", body = serde_json::Value))
)]
pub async fn fields() -> Response {
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
    let body = serde_json::json!({ "tables": tables }).to_string();
    axum::response::IntoResponse::into_response((
        [(header::CONTENT_TYPE, "application/json")],
        body,
    ))
}

fn metric_param(pairs: &[(String, String)]) -> Result<String, AppError> {
    let numeric: Vec<String> = schema::RUN_COLUMNS
        .iter()
        .filter(|c| c.ty.is_numeric())
        .map(|c| c.name.to_string())
        .collect();
    let m = single(pairs, "metric")?.unwrap_or("energy_per_output_token_j");
    if !numeric.iter().any(|n| n == m) {
        return Err(AppError::InvalidParameter {
            parameter: "metric".into(),
            detail: format!("'{m}' is not a numeric run column"),
            allowed: Some(numeric),
        });
    }
    Ok(m.to_string())
}

fn trim_param(pairs: &[(String, String)]) -> Result<f64, AppError> {
    match single(pairs, "trim")? {
        None => Ok(0.0),
        Some(v) => v
            .parse::<f64>()
            .ok()
            .filter(|t| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| AppError::InvalidParameter {
                parameter: "trim".into(),
                detail: format!(
                    "'trim' is the fraction dropped from each end, 0 or more (at least two values of a group always stay), not '{v}'"
                ),
                allowed: None,
            }),
    }
}

fn strict_param(pairs: &[(String, String)]) -> Result<bool, AppError> {
    match single(pairs, "strict")? {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(v) => Err(AppError::InvalidParameter {
            parameter: "strict".into(),
            detail: format!("'strict' is true or false, not '{v}'"),
            allowed: Some(vec!["true".into(), "false".into()]),
        }),
    }
}

fn refuse_if_strict(strict: bool, warnings: &[String]) -> Result<(), AppError> {
    if strict && !warnings.is_empty() {
        return Err(AppError::InvalidParameter {
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

/// Repeat statistics per group: n, mean, sample std, SEM, the exact t(0.975, n−1) 95% interval,
/// CV, min and max of `metric` (default energy_per_output_token_j) over the runs of each group of
/// `by` (comma-separated run columns; default `source_id,experiment_id`, the repeats of one
/// experiment). `trim=p` drops max(1, ⌊p·n⌋) values from each end of groups of 4 or more (IPW's
/// rule). LEM's own CycleStatistics are returned beside ours as `reported` (for
/// gpu_cpu_ram_energy_j and output_tps_per_process). Filters as for `/v1/measurements/runs`; groups
/// that mix energy scopes, windows or batch semantics carry `warnings`, and `strict=true` refuses them.
#[utoipa::path(
    get,
    path = "/v1/measurements/repeat-stats",
    tag = "measurements",
    responses(
        (status = 200, description = "`{metric, by, groups: [{key, n, mean, std, sem, t, ci95_lo, ci95_hi, cv, min, max, trimmed, missing, reported, warnings}], warnings}`; other formats carry one row per group",
            content(
                (serde_json::Value = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::QueryProblems,
    )
)]
pub async fn repeat_stats(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let cols = schema::RUN_COLUMNS;
    let pairs = pairs(query.as_deref());
    let format = format_of(&pairs, &headers)?;
    let filters = filters(
        &pairs,
        cols,
        &["by", "metric", "trim", "strict", "format"],
        &[""],
    )?
    .remove(0);
    let metric = metric_param(&pairs)?;
    let trim = trim_param(&pairs)?;
    let strict = strict_param(&pairs)?;
    // Without `by` (or with it empty): the repeats of one experiment of one source.
    let mut by: Vec<String> = single(&pairs, "by")?
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
            return Err(AppError::UnknownField {
                parameter: "by".into(),
                field: b.clone(),
                allowed: names(cols),
            });
        }
    }
    let snapshot = state.service.snapshot();
    let view = state.service.measurements(&snapshot);
    let groups: Vec<Group> = measurements::repeat_stats(&view, &filters, &by, &metric, trim)?;
    let mut warnings: Vec<String> = groups
        .iter()
        .flat_map(|g| g.warnings.iter().cloned())
        .collect();
    warnings.sort();
    warnings.dedup();
    refuse_if_strict(strict, &warnings)?;
    let encoded = cached(&state.cache, &snapshot, &uri, format, || {
        let frame: Frame = measurements::group_frame(&groups, &by);
        let body = encode::encode_frame(&frame, format, &|_| true, |buf, _| {
            let list: Vec<serde_json::Value> = groups
                .iter()
                .map(|g| {
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
                })
                .collect();
            let doc = serde_json::json!({"metric": metric, "by": by, "trim": trim, "groups": list, "warnings": warnings});
            buf.extend_from_slice(doc.to_string().as_bytes());
        })?;
        Ok(Encoded {
            total: Some(groups.len()),
            ..Encoded::new(format.content_type(), body)
        })
    })?;
    Ok(respond(&encoded))
}

/// Compare two groups of runs: `a.<filter>=...` and `b.<filter>=...` select them (filters as for
/// `/v1/measurements/runs`, prefixed; a group without a filter is every run). Answers both groups' statistics of `metric`, the difference
/// a − b with Welch's 95% interval (Welch–Satterthwaite degrees of freedom, exact t), the
/// two-sided p-value, Cohen's d and Hedges' g, and `warnings` when the groups mix energy scopes,
/// windows, attributions or batch semantics (`strict=true` refuses such a comparison with 400).
#[utoipa::path(
    get,
    path = "/v1/measurements/compare",
    tag = "measurements",
    responses((status = 200, description = "`{metric, a: {runs, n, mean, ...}, b: {...}, difference, ratio, se, df, t_statistic, p_value, ci95_lo, ci95_hi, cohens_d, hedges_g, warnings}`", body = serde_json::Value),
        super::problems::ParameterProblems,
    )
)]
pub async fn compare(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<Response, AppError> {
    let cols = schema::RUN_COLUMNS;
    let pairs = pairs(query.as_deref());
    let mut fs = filters(&pairs, cols, &["metric", "trim", "strict"], &["a.", "b."])?;
    let (b, a) = (fs.pop().unwrap_or_default(), fs.pop().unwrap_or_default());
    let metric = metric_param(&pairs)?;
    let trim = trim_param(&pairs)?;
    let strict = strict_param(&pairs)?;
    let snapshot = state.service.snapshot();
    let view = state.service.measurements(&snapshot);
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
    Ok(axum::response::IntoResponse::into_response((
        [(header::CONTENT_TYPE, "application/json")],
        doc.to_string(),
    )))
}

/// The same request with `offset` replaced.
fn page_link(path: &str, query: Option<&str>, offset: usize) -> String {
    let mut ser = form_urlencoded::Serializer::new(String::new());
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if k != "offset" {
            ser.append_pair(&k, &v);
        }
    }
    ser.append_pair("offset", &offset.to_string());
    format!("{path}?{}", ser.finish())
}
