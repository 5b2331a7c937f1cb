//! A person with a browser: the home page at `/` (what is served, and how to reach it from curl,
//! SQL clients, Python and AI assistants; `/` asked for JSON answers the index of the API), and
//! the explorer at `/explore/{domain}` (filters, facets, the runs table, the Pareto chart, the
//! best configuration under a deadline, the batch sweep, and each view as curl, Python and SQL)
//! with a page per run (`/explore/{domain}/runs/{run_id}`: every field, the raw data's charts).
//!
//! Pages are rendered on the server from the snapshot (`pages`, maud templates that escape every
//! value), cached and revalidated like every answer (ETag, 304, compression), and sent with a
//! Content-Security-Policy that allows the server's own script, style sheet and images only: the
//! charts are the API's SVG endpoints, the script a few lines (`assets/explore.js`).

mod pages;
pub mod snippets;
pub mod view;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use axum::Router;
use axum::extract::{OriginalUri, Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Serialize;
use utoipa::ToSchema;

use self::pages::{Best, Chrome, Column, Control, Row, Snippets};
use self::view::{DEFAULT_LIMIT, View, encode, number};
use super::answer::{Encoded, cached_as, respond};
use super::error::AppError;
use super::state::{AppState, origin};
use crate::engine::frame::Value;
use crate::engine::{Domain, Filter, RunQuery, RunTable};
use crate::service::ask::{self, Answer, Member, Question, Request, Rows, Shape};
use crate::service::{RawFile, Snapshot};
use crate::store::RawLocation;

const HTML: &str = "text/html; charset=utf-8";

/// The pages' policy: the server's own script, style sheet, images and forms; nothing inline,
/// nothing from elsewhere, no framing.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Rows of the best-configuration table a page shows (the JSON link has them all).
const BEST_ROWS: usize = 10;

/// The explorer's routes (the home page is an API route: `home`).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/explore", get(|| async { Redirect::to("/explore/llm") }))
        .route("/explore/", get(|| async { Redirect::to("/explore/llm") }))
        .route("/explore/assets/{file}", get(asset))
        .route("/explore/{domain}", get(explorer))
        .route("/explore/{domain}/runs/{run_id}", get(run))
        .route("/explore/{domain}/changes", get(changes))
}

/// The index of the API: what is served and where each family of endpoints is.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiIndex {
    pub service: &'static str,
    pub version: &'static str,
    /// The id of the snapshot served (as `X-Snapshot-Id`).
    pub snapshot: String,
    /// Runs per domain.
    pub runs: HashMap<String, usize>,
    /// The OpenAPI document, and its Swagger UI.
    pub openapi: &'static str,
    pub docs: &'static str,
    /// The explorer's pages, one per domain.
    pub explorer: Vec<String>,
    /// The endpoints by family (the OpenAPI document's tags), in the document's order.
    pub families: Vec<Family>,
}

/// One family of endpoints: an OpenAPI tag, what it is for and its paths.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Family {
    pub name: String,
    pub description: Option<String>,
    pub paths: Vec<String>,
}

/// The families of the OpenAPI document, made once.
static FAMILIES: LazyLock<Vec<Family>> = LazyLock::new(|| families(&super::openapi_document()));

fn families(doc: &utoipa::openapi::OpenApi) -> Vec<Family> {
    let mut out: Vec<Family> = doc
        .tags
        .iter()
        .flatten()
        .map(|t| Family {
            name: t.name.clone(),
            description: t.description.clone(),
            paths: Vec::new(),
        })
        .collect();
    for (path, item) in &doc.paths.paths {
        let tag = [&item.get, &item.post]
            .into_iter()
            .flatten()
            .find_map(|op| op.tags.as_ref().and_then(|t| t.first().cloned()));
        let Some(tag) = tag else { continue };
        match out.iter_mut().find(|f| f.name == tag) {
            Some(f) => f.paths.push(path.clone()),
            None => out.push(Family {
                name: tag,
                description: None,
                paths: vec![path.clone()],
            }),
        }
    }
    out.retain(|f| !f.paths.is_empty());
    out
}

/// Whether the client asked for HTML (a browser) rather than JSON.
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';').map(str::trim);
            let media = parts.next().unwrap_or("");
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            media.eq_ignore_ascii_case("text/html") && !refused
        })
}

/// The home page (a browser) or the index of the API (JSON).
#[utoipa::path(
    get,
    path = "/",
    tag = "catalog",
    responses(
        (status = 200, description = "The index of the API as JSON; a browser (Accept: text/html) gets the home page",
            content(
                (ApiIndex = "application/json"),
                (String = "text/html"),
            )),
    )
)]
pub async fn home(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let wants_jsonld = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/ld+json"));
    if wants_jsonld {
        let revision = super::state::Revision::of_query(uri.query())?;
        return super::provenance::croissant_of(&state, &headers, &revision).await;
    }
    let snapshot = state.service.snapshot();
    if !wants_html(&headers) {
        let encoded = cached_as(&state.cache, &snapshot, &uri, "json", || {
            let body = serde_json::to_vec(&ApiIndex::of(&snapshot))
                .map_err(|e| AppError::Internal(e.to_string()))?;
            Ok(encoded("application/json", body))
        })?;
        return Ok(respond(&encoded));
    }
    let origin = origin(&headers);
    Ok(page(
        &state,
        &snapshot,
        &uri,
        (&origin, true),
        "/explore/llm",
        |snapshot| {
            let facts = home_facts(&state, snapshot, origin.clone());
            Ok(("ML.ENERGY benchmark data".to_string(), pages::home(&facts)))
        },
    ))
}

impl ApiIndex {
    /// The index of the service serving `snapshot`.
    fn of(snapshot: &Snapshot) -> ApiIndex {
        ApiIndex {
            service: "mlenergy-server",
            version: env!("CARGO_PKG_VERSION"),
            snapshot: crate::service::catalog::snapshot_id(&snapshot.content_id).to_string(),
            runs: Domain::ALL
                .iter()
                .map(|&d| (d.as_str().to_string(), snapshot.table(d).len()))
                .collect(),
            openapi: "/openapi.json",
            docs: "/docs",
            explorer: Domain::ALL
                .iter()
                .map(|d| format!("/explore/{}", d.as_str()))
                .collect(),
            families: FAMILIES.clone(),
        }
    }
}

/// What the home page says: the snapshot, its runs, and the front ends served beside the API.
fn home_facts(state: &AppState, snapshot: &Snapshot, origin: String) -> pages::Home {
    pages::Home {
        origin,
        source: snapshot.source.location.clone(),
        revision: snapshot.source.revision.clone(),
        snapshot: crate::service::catalog::snapshot_id(&snapshot.content_id).to_string(),
        loaded_at: humantime::format_rfc3339_seconds(snapshot.loaded_at).to_string(),
        domains: Domain::ALL
            .iter()
            .map(|&d| {
                let t = snapshot.table(d);
                let (stable, unstable) = t.stability_counts();
                pages::DomainFacts {
                    domain: d,
                    rows: t.len(),
                    stable,
                    unstable,
                }
            })
            .collect(),
        leaderboard_ui: state.http.leaderboard_ui.is_some(),
        pg: state.http.front_ends.pg.map(|a| a.to_string()),
        flight: state.http.front_ends.flight.map(|a| a.to_string()),
        mcp: state.http.mcp.is_some(),
        mirror: state.http.mirror.is_some(),
    }
}

fn encoded(content_type: &'static str, body: Vec<u8>) -> Encoded {
    Encoded::new(content_type, body)
}

/// A page of the snapshot: rendered once per (snapshot, URI, origin), cached, sent with the
/// policy. A refusal is the problem+json document every endpoint answers, or for a browser (`html`)
/// a page with the problem's status saying the same.
fn page(
    state: &AppState,
    snapshot: &Arc<Snapshot>,
    uri: &Uri,
    (origin, html): (&str, bool),
    back: &str,
    render: impl FnOnce(&Snapshot) -> Result<(String, maud::Markup), AppError>,
) -> Response {
    let today = crate::service::snapshot::utc_date(std::time::SystemTime::now());
    let permalink = super::transport::pinned_path(uri, snapshot.pin());
    let cite = crate::service::croissant::bibtex(snapshot, &today);
    let chrome = |title: &str, content| {
        pages::page(
            &Chrome {
                title,
                snapshot: crate::service::catalog::snapshot_id(&snapshot.content_id),
                source: &snapshot.source.location,
                permalink: &permalink,
                cite: &cite,
            },
            content,
        )
        .into_string()
    };
    let made = cached_as(
        &state.cache,
        snapshot,
        uri,
        &format!("html|{origin}|{today}"),
        || {
            let (title, content) = render(snapshot)?;
            Ok(encoded(HTML, chrome(&title, content).into_bytes()))
        },
    );
    let mut resp = match made {
        Ok(e) => respond(&e),
        Err(e) if !html => e.into_response(),
        Err(e) => {
            let problem = e.problem();
            let status = e.status();
            let body = chrome(&problem.title, pages::problem(&problem, back));
            let mut r = (status, body).into_response();
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(HTML));
            r
        }
    };
    secure(resp.headers_mut());
    resp
}

fn secure(h: &mut HeaderMap) {
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
}

/// The script and the style sheet of the pages, from the binary.
async fn asset(Path(file): Path<String>) -> Response {
    let (body, content_type): (&'static str, &'static str) = match file.as_str() {
        "explore.css" => (
            include_str!("assets/explore.css"),
            "text/css; charset=utf-8",
        ),
        "icon.svg" => (include_str!("assets/icon.svg"), "image/svg+xml"),
        "explore.js" => (
            include_str!("assets/explore.js"),
            "text/javascript; charset=utf-8",
        ),
        _ => return AppError::NoRoute(format!("/explore/assets/{file}")).into_response(),
    };
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    secure(resp.headers_mut());
    resp
}

/// A cell as the runs table shows it: floats to four significant digits (the full value kept
/// for the cell's title), other values as they are.
fn shown(v: Value<'_>) -> (String, Option<String>) {
    match v {
        Value::Float(x) => {
            let short = short_float(x);
            let full = full(v);
            if short == full {
                (short, None)
            } else {
                (short, Some(full))
            }
        }
        other => (full(other), None),
    }
}

/// A cell's whole value (floats in their shortest exact form).
fn full(v: Value<'_>) -> String {
    match v {
        Value::Null => String::new(),
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(x) => {
            let mut b = ryu::Buffer::new();
            b.format(x).to_string()
        }
        Value::Bool(b) => b.to_string(),
    }
}

fn short_float(x: f64) -> String {
    if !x.is_finite() || x == 0.0 {
        return full(Value::Float(x));
    }
    let magnitude = x.abs().log10().floor() as i32;
    if !(-3..6).contains(&magnitude) {
        return format!("{x:.3e}");
    }
    let decimals = (3 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

/// A value as a filter takes it (`None`: null, which no filter names).
fn filter_value(v: Value<'_>) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Float(x) => Some(number(x)),
        other => Some(full(other)),
    }
}

/// The filters of the form with select lists: (parameter, field).
fn chosen_filters(domain: Domain) -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = ask::string_filters(domain)
        .iter()
        .filter(|(p, _, _)| *p != "run_id")
        .map(|(p, f, _)| (*p, *f))
        .collect();
    out.extend(ask::numeric_filters(domain).iter().map(|(p, _)| (*p, *p)));
    out
}

/// A filter's control: the snapshot's values of the field, each with the runs it matches under
/// the other filters (the facet count, as `/groups?by=` counts them), and the view's choice.
fn control(
    view: &View,
    table: &RunTable,
    q: &RunQuery,
    param: &'static str,
    field: &str,
) -> Result<Control, AppError> {
    let col = table.require_field(field)?;
    let column = table.column(col);
    let others: Vec<Filter> = q
        .filters
        .iter()
        .filter(|f| f.field() != field)
        .cloned()
        .collect();
    let rows = table.filter_rows(&others, q.stability)?;
    let mut counts: HashMap<String, usize> = HashMap::new();
    for group in table.group_rows(&[col], rows) {
        if let Some(v) = filter_value(column.get(group[0])) {
            counts.insert(v, group.len());
        }
    }
    // Every value of the snapshot, in the field's order.
    let mut firsts: Vec<usize> = table
        .group_rows(&[col], (0..table.len()).collect())
        .into_iter()
        .map(|g| g[0])
        .collect();
    firsts.sort_by(|&a, &b| crate::engine::table::cmp_values(column.get(a), column.get(b)));
    let options: Vec<(String, usize)> = firsts
        .into_iter()
        .filter_map(|r| filter_value(column.get(r)))
        .map(|v| {
            let n = counts.get(&v).copied().unwrap_or(0);
            (v, n)
        })
        .collect();
    let toggles = options
        .iter()
        .map(|(v, _)| format!("?{}", view.toggled(param, v)))
        .collect();
    Ok(Control {
        param,
        label: param.to_string(),
        chosen: view.values(param).into_iter().map(str::to_string).collect(),
        options,
        toggles,
        histogram: None,
    })
}

fn columns_of(
    view: &View,
    table: &RunTable,
    q: &RunQuery,
    cols: &[usize],
    sortable: bool,
) -> Vec<Column> {
    let first = q.sort.first();
    cols.iter()
        .map(|&c| {
            let f = &table.fields[c];
            let sorted = first.filter(|k| k.field == f.name).map(|k| {
                if k.descending {
                    "descending"
                } else {
                    "ascending"
                }
            });
            let next = if sorted == Some("ascending") {
                format!("-{}", f.name)
            } else {
                f.name.to_string()
            };
            Column {
                name: f.name,
                unit: f.unit,
                numeric: f.ty.is_numeric(),
                sorted,
                sort_link: if sortable {
                    format!("?{}", view.with("sort", Some(&next)))
                } else {
                    String::new()
                },
            }
        })
        .collect()
}

fn rows_of(table: &RunTable, rows: &[usize], cols: &[usize]) -> Vec<Row> {
    rows.iter()
        .map(|&r| Row {
            run_id: table.run_id(r).to_string(),
            cells: cols
                .iter()
                .map(|&c| shown(table.column(c).get(r)))
                .collect(),
        })
        .collect()
}

/// `path?query`, or `path` alone for an empty query.
fn with_query(path: &str, query: &str) -> String {
    if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{query}")
    }
}

/// The explorer of a domain.
async fn explorer(
    State(state): State<AppState>,
    Path(domain): Path<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    domain_page(
        &state,
        &domain,
        &uri,
        &headers,
        |snapshot, domain, origin| {
            let e = explorer_of(&state, snapshot, domain, query.as_deref(), origin)?;
            Ok((pages::domain_title(domain).to_string(), pages::explorer(&e)))
        },
    )
    .await
}

/// `page` of a domain named in the path (an unknown one is refused on a page that leads back
/// to the LLM explorer).
async fn domain_page(
    state: &AppState,
    domain: &str,
    uri: &Uri,
    headers: &HeaderMap,
    render: impl FnOnce(&Snapshot, Domain, &str) -> Result<(String, maud::Markup), AppError>,
) -> Response {
    let origin = origin(headers);
    let asked = match super::state::Revision::of_query(uri.query()) {
        Ok(r) => r.snapshot(state).await,
        Err(e) => Err(e),
    };
    // A revision refused is shown on a page of the served snapshot.
    let (snapshot, refused) = match asked {
        Ok(snapshot) => (snapshot, None),
        Err(e) => (state.service.snapshot(), Some(e)),
    };
    let back = format!(
        "/explore/{}",
        Domain::parse(domain).unwrap_or(Domain::Llm).as_str()
    );
    page(
        state,
        &snapshot,
        uri,
        (&origin, wants_html(headers)),
        &back,
        |snapshot| {
            if let Some(e) = refused {
                return Err(e);
            }
            let domain = super::state::parse_domain(domain)?;
            render(snapshot, domain, &origin)
        },
    )
}

fn explorer_of(
    state: &AppState,
    snapshot: &Snapshot,
    domain: Domain,
    query: Option<&str>,
    origin: &str,
) -> Result<pages::Explorer, AppError> {
    let d = domain.as_str();
    let table = snapshot.table(domain);
    let view = View::parse(domain, query)?;
    let mut q = view
        .params
        .run_query(domain, table, state.limits.max_rows)?;
    let limit = *q.limit.get_or_insert(DEFAULT_LIMIT);
    let cols = view.columns(table)?;
    let shown_cols = &cols[1..];
    let page_query = {
        let mut pairs = view.pairs.clone();
        if !pairs.iter().any(|(k, _)| k == "limit") {
            pairs.push(("limit".into(), limit.to_string()));
        }
        encode(&pairs)
    };
    // The page's runs: the door's answer to the run list the page's query asks.
    let list = ask_runs(
        state,
        snapshot,
        (Question::List, "runs"),
        domain,
        &page_query,
    )?;
    let total = list.total.unwrap_or(0);

    let mut covered: Vec<String> = Vec::new();
    let mut controls = Vec::new();
    for (param, field) in chosen_filters(domain) {
        controls.push(control(&view, table, &q, param, field)?);
        covered.push(param.to_string());
    }
    histograms(state, snapshot, domain, &view, &mut controls)?;
    let batch = ask::numeric_filters(domain)
        .iter()
        .map(|(p, _)| *p)
        .find(|p| *p != "num_gpus")
        .unwrap_or("num_gpus");
    let inputs = typed_inputs(&view, domain, &mut covered);
    let stability = (domain == Domain::Llm).then(|| {
        covered.push("stability".into());
        view.one("stability").unwrap_or("stable").to_string()
    });
    covered.extend(["limit".to_string(), "offset".to_string()]);
    let hidden: Vec<(String, String)> = view
        .pairs
        .iter()
        .filter(|(k, _)| !covered.contains(k))
        .cloned()
        .collect();

    let filters = encode(&view.filter_pairs());
    let (best, latency_unit) = best_of(state, snapshot, &view, &q, batch)?;

    let sweep = if view.one("model_id").is_some()
        && view.one("gpu_model").is_some()
        && view.one("num_gpus").is_some()
    {
        Ok(with_query(&format!("/v1/{d}/charts/sweep.svg"), &filters))
    } else {
        Err("Choose one model_id, one gpu_model and one num_gpus to see the batch sweep with its fitted logistic curve.".to_string())
    };

    let sql = snippets::sql(domain, table, &q, &cols);
    let offset = q.offset;
    Ok(pages::Explorer {
        domain,
        action: format!("/explore/{d}"),
        total,
        offset,
        limit,
        controls,
        inputs,
        stability,
        hidden,
        deadline_value: view.deadline.map(number).unwrap_or_default(),
        deadline_unit: latency_unit,
        columns: columns_of(&view, table, &q, shown_cols, true),
        rows: rows_of(table, table_rows(&list), shown_cols),
        prev: (offset > 0).then(|| {
            format!(
                "?{}",
                view.with("offset", Some(&offset.saturating_sub(limit).to_string()))
            )
        }),
        next: (offset.saturating_add(limit) < total).then(|| {
            format!(
                "?{}",
                view.with("offset", Some(&(offset + limit).to_string()))
            )
        }),
        warnings: view.params.filter_warnings(domain, table),
        pareto: with_query(&format!("/v1/{d}/charts/pareto.svg"), &filters),
        sweep,
        best,
        snippets: Snippets {
            curl: snippets::curl(origin, domain, &page_query),
            python: snippets::python(origin, domain, &q, &page_query),
            sql_link: format!("/v1/sql?{}", encode(&[("q".to_string(), sql.clone())])),
            sql,
        },
    })
}

/// The explorer's typed inputs: the ranges of the numeric filters and the run ids (a
/// comma-separated list), each parameter added to `covered`.
fn typed_inputs(view: &View, domain: Domain, covered: &mut Vec<String>) -> Vec<pages::Input> {
    let mut inputs = Vec::new();
    for (p, _) in ask::numeric_filters(domain) {
        for (suffix, sign) in [("_min", "≥"), ("_max", "≤")] {
            let param = format!("{p}{suffix}");
            let value = view.one(&param).unwrap_or("").to_string();
            inputs.push(pages::Input {
                label: format!("{p} {sign}"),
                param: param.clone(),
                value,
                numeric: true,
            });
            covered.push(param);
        }
    }
    inputs.push(pages::Input {
        param: "run_id".into(),
        label: "run_id (comma-separated)".into(),
        value: view.values("run_id").join(","),
        numeric: false,
    });
    covered.push("run_id".into());
    inputs
}

/// The door's answer to `question` of `domain`'s runs with the parameters of `query`, asked at
/// `/v1/{domain}/{resource}` (its JSON twin).
fn ask_runs(
    state: &AppState,
    snapshot: &Snapshot,
    (question, resource): (Question, &str),
    domain: Domain,
    query: &str,
) -> Result<Answer, AppError> {
    let path = format!("/v1/{}/{resource}", domain.as_str());
    let req = Request::parse(question, domain, None, Some(query), path)?;
    Ok(state.door.answer(&req, snapshot)?)
}

/// Each numeric facet's histogram over the matching runs: the door's `/statistics` of its
/// column under the view's filters.
fn histograms(
    state: &AppState,
    snapshot: &Snapshot,
    domain: Domain,
    view: &View,
    controls: &mut [pages::Control],
) -> Result<(), AppError> {
    let numeric: Vec<&str> = ask::numeric_filters(domain)
        .iter()
        .map(|(p, _)| *p)
        .collect();
    let mut pairs = view.filter_pairs();
    pairs.push(("fields".into(), numeric.join(",")));
    let answer = ask_runs(
        state,
        snapshot,
        (Question::Statistics, "statistics"),
        domain,
        &encode(&pairs),
    )?;
    let Shape::Document(doc) = &answer.shape else {
        return Ok(());
    };
    for stat in doc["statistics"].as_array().into_iter().flatten() {
        let histogram = &stat["column_statistics"]["histogram"];
        let numbers = |key: &str| -> Option<Vec<f64>> {
            histogram[key]
                .as_array()?
                .iter()
                .map(serde_json::Value::as_f64)
                .collect()
        };
        if let (Some(name), Some(hist), Some(edges)) = (
            stat["column_name"].as_str(),
            numbers("hist"),
            numbers("bin_edges"),
        ) && let Some(c) = controls.iter_mut().find(|c| c.param == name)
        {
            c.histogram = Some((hist, edges));
        }
    }
    Ok(())
}

/// The run-table rows of an answer of the run table.
fn table_rows(answer: &Answer) -> &[usize] {
    match &answer.rows {
        Rows::Table { rows, .. } => rows,
        _ => &[],
    }
}

/// The best configuration per model under the deadline (the view's, else the task's default):
/// the door's answer to the JSON link the page gives, and the unit of the latency it is met on.
fn best_of(
    state: &AppState,
    snapshot: &Snapshot,
    view: &View,
    q: &RunQuery,
    batch: &str,
) -> Result<(Best, &'static str), AppError> {
    let domain = view.domain;
    let table = snapshot.table(domain);
    let mut best_pairs = view.filter_pairs();
    if let Some(dl) = view.deadline {
        best_pairs.push(("deadline".into(), number(dl)));
    }
    let best_query = encode(&best_pairs);
    let chosen = ask_runs(
        state,
        snapshot,
        (Question::Best, "best"),
        domain,
        &best_query,
    )?;
    let member = |name: &str| match &chosen.shape {
        Shape::Envelope { members, .. } => members.iter().find(|(n, _)| *n == name).map(|m| &m.1),
        _ => None,
    };
    let (Some(Member::Text(latency)), Some(Member::Number(deadline)), Some(Member::Text(energy))) =
        (member("latency"), member("deadline"), member("energy"))
    else {
        return Err(AppError::Internal("the best runs' envelope".into()));
    };
    let latency_unit = table
        .field_index(latency)
        .and_then(|i| table.fields[i].unit)
        .unwrap_or("");
    let best_fields: Vec<usize> = [
        "model_id",
        "gpu_model",
        "num_gpus",
        batch,
        energy.as_str(),
        latency.as_str(),
    ]
    .iter()
    .filter_map(|f| table.field_index(f))
    .collect();
    let rows = table_rows(&chosen);
    let best = Best {
        deadline: deadline.map(|dl| format!("{latency} ≤ {} {latency_unit}", number(dl))),
        deadline_default: view.deadline.is_none() && deadline.is_some(),
        columns: columns_of(view, table, q, &best_fields, false),
        rows: rows_of(table, &rows[..rows.len().min(BEST_ROWS)], &best_fields),
        more: rows.len().saturating_sub(BEST_ROWS),
        json: with_query(&format!("/v1/{}/best", domain.as_str()), &best_query),
    };
    Ok((best, latency_unit))
}

/// What changed between two revisions: the door's `changes` answer to the page's query, shown.
async fn changes(
    State(state): State<AppState>,
    Path(domain): Path<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let query = query.unwrap_or_default();
    let asked = async {
        let domain = super::state::parse_domain(&domain)?;
        if !query
            .split('&')
            .any(|p| p.starts_with("from=") && p.len() > 5)
        {
            return Ok(None);
        }
        let path = format!("/v1/{}/changes", domain.as_str());
        let req = Request::parse(Question::Changes, domain, None, Some(&query), path)?;
        let reply = state.door.ask(&req).await?;
        let whole = reply
            .whole()
            .ok_or_else(|| AppError::Internal("a changes answer too long to hold".into()))?;
        serde_json::from_slice::<serde_json::Value>(&whole.body)
            .map(Some)
            .map_err(|e| AppError::Internal(e.to_string()))
    };
    let answered = asked.await;
    domain_page(&state, &domain, &uri, &headers, move |_, domain, _| {
        let doc = answered?;
        let d = domain.as_str();
        Ok((
            format!("{} changes", pages::domain_title(domain)),
            pages::changes_page(d, &query, doc.as_ref()),
        ))
    })
    .await
}

/// A run's page.
async fn run(
    State(state): State<AppState>,
    Path((domain, run_id)): Path<(String, String)>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Response {
    domain_page(
        &state,
        &domain,
        &uri,
        &headers,
        |snapshot, domain, origin| {
            let r = run_of(snapshot, domain, &run_id, origin)?;
            Ok((run_id.clone(), pages::run_page(&r)))
        },
    )
    .await
}

fn run_of(
    snapshot: &Snapshot,
    domain: Domain,
    run_id: &str,
    origin: &str,
) -> Result<pages::RunPage, AppError> {
    let d = domain.as_str();
    let table = snapshot.table(domain);
    let row = table.row_of(run_id).ok_or_else(|| AppError::UnknownRun {
        domain: d.into(),
        run_id: run_id.into(),
    })?;
    let fields = table
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| pages::FieldRow {
            name: f.name,
            value: full(table.column(i).get(row)),
            unit: f.unit,
            description: f.description,
        })
        .collect();
    let seg = pages::path_segment(run_id);
    let api = format!("/v1/{d}/runs/{seg}");
    let raw = match snapshot.raw_location(domain, row, RawFile::Results) {
        Err(why) => Err(why.0),
        Ok(RawLocation::Local { path, .. }) if !path.is_file() => {
            Err("its results file is not in this dataset's directory".to_string())
        }
        Ok(_) => {
            let mut charts = vec![
                pages::RawChart {
                    title: "Power per GPU and their total",
                    src: format!("{api}/timeline.svg"),
                    alt: "The run's power draw over time, per GPU and in total.",
                },
                pages::RawChart {
                    title: "Temperature per GPU",
                    src: format!("{api}/timeline.svg?metric=temperature"),
                    alt: "The run's GPU temperatures over time.",
                },
            ];
            let mut links = vec![
                (
                    format!("{api}/raw/results.json"),
                    "results.json (raw)".to_string(),
                ),
                (
                    format!("{api}/timeline"),
                    "the power timeline as JSON".to_string(),
                ),
            ];
            if domain == Domain::Llm {
                charts.push(pages::RawChart {
                    title: "Inter-token latencies (smoothed)",
                    src: format!("{api}/itl.svg"),
                    alt: "Histogram of the run's smoothed inter-token latencies.",
                });
                if snapshot
                    .raw_location(domain, row, RawFile::Prometheus)
                    .is_ok()
                {
                    links.push((
                        format!("{api}/raw/prometheus.json"),
                        "prometheus.json (raw)".to_string(),
                    ));
                }
                links.push((
                    format!("{api}/itl"),
                    "inter-token latencies as JSON".to_string(),
                ));
                links.push((
                    format!("{api}/output-lengths"),
                    "output lengths as JSON".to_string(),
                ));
            }
            Ok(pages::RawData { charts, links })
        }
    };
    let mut csv_pairs = vec![("run_id".to_string(), run_id.to_string())];
    if domain == Domain::Llm {
        csv_pairs.push(("stability".into(), "all".into()));
    }
    csv_pairs.push(("format".into(), "csv".into()));
    let sql = format!(
        "SELECT *\nFROM {d}_runs\nWHERE run_id = '{}'",
        run_id.replace('\'', "''")
    );
    Ok(pages::RunPage {
        domain,
        run_id: run_id.to_string(),
        fields,
        raw,
        snippets: Snippets {
            curl: format!("curl {}", snippets::shell_word(&format!("{origin}{api}"))),
            python: format!(
                "import pandas as pd\nrun = pd.read_csv({})",
                snippets::python_str(&format!("{origin}/v1/{d}/runs?{}", encode(&csv_pairs)))
            ),
            sql_link: format!("/v1/sql?{}", encode(&[("q".to_string(), sql.clone())])),
            sql,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_shortened_to_four_significant_digits() {
        assert_eq!(short_float(0.123456), "0.1235");
        assert_eq!(short_float(1234.5678), "1235");
        assert_eq!(short_float(12.0), "12.00");
        assert_eq!(short_float(0.000012345), "1.234e-5");
        assert_eq!(
            shown(Value::Float(0.5)),
            ("0.5000".into(), Some("0.5".into()))
        );
    }

    #[test]
    fn a_browser_gets_html_and_everyone_else_json() {
        let mut h = HeaderMap::new();
        assert!(!wants_html(&h));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/html,application/xhtml+xml,*/*;q=0.8"),
        );
        assert!(wants_html(&h));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/html;q=0"),
        );
        assert!(!wants_html(&h));
    }

    #[test]
    fn the_origin_is_the_host_asked_for_unless_it_is_not_a_host() {
        let mut h = HeaderMap::new();
        assert_eq!(origin(&h), "http://127.0.0.1:8080");
        h.insert(header::HOST, HeaderValue::from_static("data.example:8080"));
        assert_eq!(origin(&h), "http://data.example:8080");
        h.insert(header::HOST, HeaderValue::from_static("x\"><script>"));
        assert_eq!(origin(&h), "http://127.0.0.1:8080");
    }
}
