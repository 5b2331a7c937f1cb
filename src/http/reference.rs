//! The HTTP reference in Markdown (`docs/reference/http.md`, `docs/reference/fields.md`),
//! generated from what the OpenAPI document is generated from: the handlers' annotations (paths,
//! summaries, descriptions, answers) and the questions' declarations (`service::ask`'s parameter
//! specs, the field catalog), so the reference and the document cannot disagree. A test
//! (`tests/it/reference.rs`) fails when a committed page differs from what this writes.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::Value;

use super::problems::{PROBLEM_TYPES, PROBLEMS};
use crate::engine::Domain;
use crate::engine::fields::{FieldType, RUN_ID, derived_fields, published_fields};
use crate::service::ask::{self as ask, MAX_OFFSET, ParamSpec, Question, ValueKind};

/// The line every generated page opens with, naming how to write it again.
pub fn generated_note(what: &str) -> String {
    format!(
        "<!-- Generated from {what}: do not edit. `UPDATE_DOCS=1 cargo test --test it reference` \
         writes it again; the test fails when it drifts from the code. -->\n"
    )
}

/// A heading's anchor as GitHub makes it: lower case, characters other than letters, digits,
/// spaces, `-` and `_` dropped, spaces made `-`.
pub fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// A table cell: no line breaks, pipes escaped.
pub fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

fn code_list(words: &[impl AsRef<str>]) -> String {
    words
        .iter()
        .map(|w| format!("`{}`", w.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a declared parameter takes, in words.
fn takes(value: &ValueKind) -> String {
    match value {
        ValueKind::Strings => "strings (repeat the parameter, or separate with commas)".into(),
        ValueKind::Numbers => "numbers, comma-separated".into(),
        ValueKind::Number => "a number".into(),
        ValueKind::Choice(words) => format!("one of {}", code_list(words)),
        ValueKind::Flag => "`true` or `false`".into(),
        ValueKind::Count(max) if *max == MAX_OFFSET => "an integer from 0 to 2^53 − 1".into(),
        ValueKind::Count(max) => format!("an integer from 0 to {max}"),
        ValueKind::FieldList(_) => "field names, comma-separated".into(),
        ValueKind::SortKeys(_) => "field names, comma-separated; `-name` for descending".into(),
        ValueKind::Aggregates { .. } => {
            "aggregates `func(field)` or `func`, comma-separated".into()
        }
        ValueKind::Duration => "a duration: a positive integer and `ms`, `s`, `m` or `h`".into(),
        ValueKind::NumericFields(_) => {
            "numeric field names (repeat the parameter, or separate with commas)".into()
        }
        ValueKind::PositiveNumbers => "positive numbers, comma-separated".into(),
        ValueKind::CountOrAll => "a positive integer, or `all`".into(),
        ValueKind::NumericField(_) => "a numeric field name".into(),
        ValueKind::NonNegative => "a number ≥ 0".into(),
        ValueKind::Fraction => "a number from 0 to 0.5".into(),
        ValueKind::Revision => format!("a revision name (`{}`)", ask::REVISION_PATTERN),
    }
}

/// What a parameter its annotation declares (one no question's grammar parses) takes, from its
/// schema in the document.
fn takes_schema(schema: &Value) -> String {
    if let Some(words) = schema["enum"].as_array() {
        let words: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
        return format!("one of {}", code_list(&words));
    }
    if let Some(reference) = schema["$ref"].as_str() {
        return format!("`{}`", reference.rsplit('/').next().unwrap_or(reference));
    }
    let ty = schema["type"].as_str().unwrap_or("string");
    let mut out = match ty {
        "integer" => "an integer".to_string(),
        "number" => "a number".to_string(),
        "boolean" => "`true` or `false`".to_string(),
        other => format!("a {other}"),
    };
    match (schema["minimum"].as_f64(), schema["maximum"].as_f64()) {
        (Some(lo), Some(hi)) => write!(out, " from {lo} to {hi}").unwrap(),
        (Some(lo), None) => write!(out, " ≥ {lo}").unwrap(),
        _ => {}
    }
    if let Some(p) = schema["pattern"].as_str()
        && p != "\\S"
    {
        write!(out, " (`{p}`)").unwrap();
    }
    out
}

/// One row of an operation's parameter table.
struct Row {
    name: String,
    place: &'static str,
    domains: String,
    takes: String,
    meaning: String,
}

/// Parameters declared for each domain merged into rows, in the order the declarations give
/// them; a parameter only one domain takes says which.
fn domain_rows(question: Question, domains: &[Domain]) -> Vec<Row> {
    let per: Vec<(Domain, Vec<ParamSpec>)> = domains
        .iter()
        .map(|&d| (d, ask::parameter_specs(d, question)))
        .collect();
    let mut order: Vec<String> = Vec::new();
    for (_, specs) in &per {
        // A name not seen yet goes after the one before it in its own domain's order.
        let mut last: Option<usize> = None;
        for s in specs {
            let at = match order.iter().position(|n| *n == s.name) {
                Some(i) => i,
                None => {
                    let at = last.map_or(0, |i| i + 1);
                    order.insert(at, s.name.clone());
                    at
                }
            };
            last = Some(at);
        }
    }
    order
        .into_iter()
        .map(|name| {
            let having: Vec<(Domain, &ParamSpec)> = per
                .iter()
                .filter_map(|(d, specs)| specs.iter().find(|s| s.name == name).map(|s| (*d, s)))
                .collect();
            let (_, first) = having[0];
            let domains = if having.len() < per.len() {
                having
                    .iter()
                    .map(|(d, _)| d.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            } else {
                String::new()
            };
            let mut row = spec_row(first, domains);
            // One name that means something else in each domain (`batch`) says so per domain.
            if having
                .iter()
                .any(|(_, s)| s.description != first.description)
            {
                let meanings: Vec<String> = having
                    .iter()
                    .map(|(d, s)| format!("{d}: {}", spec_row(s, String::new()).meaning))
                    .collect();
                row.meaning = meanings.join(" ");
            }
            row
        })
        .collect()
}

fn spec_row(s: &ParamSpec, domains: String) -> Row {
    let mut meaning = s.description.clone();
    if s.required {
        meaning = format!("**Required.** {meaning}");
    }
    Row {
        name: s.name.clone(),
        place: "query",
        domains,
        takes: takes(&s.value),
        meaning,
    }
}

/// Rows of the parameters an operation's annotation declares (path parameters, and the query
/// parameters of an operation no question's grammar parses).
fn annotated_rows(op: &Value, query: bool) -> Vec<Row> {
    op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| {
            let place = p["in"].as_str().unwrap_or_default();
            place == "path" && p["name"] != "domain" || query && place == "query"
        })
        .map(|p| Row {
            name: p["name"].as_str().unwrap_or_default().to_string(),
            place: if p["in"] == "path" { "path" } else { "query" },
            domains: String::new(),
            takes: takes_schema(&p["schema"]),
            meaning: {
                let d = p["description"].as_str().unwrap_or_default().to_string();
                if p["required"] == true && p["in"] == "query" {
                    format!("**Required.** {d}")
                } else {
                    d
                }
            },
        })
        .collect()
}

/// The question an operation's handler parses with, named by its annotation in the document
/// before it is completed.
fn question_of(raw: &Value, path: &str, method: &str) -> Option<Question> {
    let name = raw["paths"][path][method]["x-query"].as_str()?;
    ask::QUERIES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, q)| *q)
}

/// The templated path a concrete domain path is a copy of, if the document has one.
fn templated_twin(paths: &serde_json::Map<String, Value>, path: &str) -> Option<String> {
    for d in Domain::ALL {
        let prefix = format!("/v1/{}/", d.as_str());
        if let Some(rest) = path.strip_prefix(&prefix) {
            let templated = format!("/v1/{{domain}}/{rest}");
            if paths.contains_key(&templated) {
                return Some(templated);
            }
        }
    }
    None
}

const METHODS: [&str; 3] = ["get", "post", "delete"];

/// One operation of the reference.
struct Op<'a> {
    method: &'a str,
    path: &'a str,
    op: &'a Value,
    rows: Vec<Row>,
}

/// An operation's rows: its path parameters (of a templated operation, as its LLM copy, which
/// takes every value either domain takes), then its query parameters.
fn operation_rows(raw: &Value, doc: &Value, path: &str, method: &str, op: &Value) -> Vec<Row> {
    let llm_copy = &doc["paths"][path.replace("{domain}", "llm")][method];
    let mut rows = annotated_rows(if llm_copy.is_null() { op } else { llm_copy }, false);
    let declared = if path.contains("{domain}") {
        question_of(raw, path, method).map(|q| domain_rows(q, &Domain::ALL))
    } else if let Some(q) = question_of(raw, path, method) {
        let domain = if path.starts_with("/v1/diffusion/") {
            Domain::Diffusion
        } else {
            Domain::Llm
        };
        Some(domain_rows(q, &[domain]))
    } else if path.starts_with("/v1/measurements/") {
        let table = path.trim_start_matches("/v1/measurements/");
        ask::measurements::measurement_specs(path, None)
            .or_else(|| {
                ask::measurements::measurement_specs("/v1/measurements/{table}", Some(table))
            })
            .map(|specs| specs.iter().map(|s| spec_row(s, String::new())).collect())
    } else {
        None
    };
    match declared {
        Some(d) => rows.extend(d),
        None => rows.extend(
            annotated_rows(op, true)
                .into_iter()
                .filter(|r| r.place == "query"),
        ),
    }
    rows
}

/// The answers an operation documents: its success statuses with their media types, and its
/// refusals by status, linked to the problems' section.
fn answers(op: &Value) -> String {
    let mut ok = Vec::new();
    let mut refusals = Vec::new();
    for (status, response) in op["responses"].as_object().into_iter().flatten() {
        if let Some(reference) = response["$ref"].as_str() {
            let name = reference.rsplit('/').next().unwrap_or(reference);
            refusals.push(format!("[`{status}`](#{})", anchor(&problem_heading(name))));
        } else {
            let types: Vec<String> = response["content"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(t, _)| format!("`{t}`"))
                .collect();
            let what = response["description"].as_str().unwrap_or_default();
            if types.is_empty() {
                ok.push(format!("`{status}` {}", cell(what)));
            } else {
                ok.push(format!("`{status}` {} ({})", cell(what), types.join(", ")));
            }
        }
    }
    let mut out = format!("Answers: {}.", ok.join("; "));
    if !refusals.is_empty() {
        write!(out, " Refusals: {}.", refusals.join(", ")).unwrap();
    }
    out
}

fn problem_heading(name: &str) -> String {
    let (status, _, _) = PROBLEMS
        .iter()
        .find(|p| p.1 == name)
        .copied()
        .unwrap_or((0, name, ""));
    format!("{status} {name}")
}

fn heading(method: &str, path: &str) -> String {
    format!("{} {path}", method.to_uppercase())
}

/// `docs/reference/http.md`.
pub fn http_markdown() -> String {
    let raw = serde_json::to_value(super::api_annotations()).expect("the document serialises");
    let doc = serde_json::to_value(super::openapi_document()).expect("the document serialises");
    let paths = doc["paths"].as_object().expect("paths");
    let tags: Vec<(String, String)> = doc["tags"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or_default().to_string(),
                t["description"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();

    let mut ops: Vec<(String, Op)> = Vec::new();
    let mut concrete: BTreeSet<String> = BTreeSet::new();
    for (path, item) in paths {
        if let Some(t) = templated_twin(paths, path) {
            // The concrete copies of a templated operation are described with it.
            concrete.insert(t);
            continue;
        }
        for method in METHODS {
            let op = &item[method];
            if op.is_null() {
                continue;
            }
            let tag = op["tags"][0].as_str().unwrap_or("other").to_string();
            ops.push((
                tag,
                Op {
                    method,
                    path,
                    op,
                    rows: operation_rows(&raw, &doc, path, method, op),
                },
            ));
        }
    }
    let mut groups: Vec<(String, String)> = tags.clone();
    for (tag, _) in &ops {
        if !groups.iter().any(|(t, _)| t == tag) {
            groups.push((tag.clone(), "Pages, documents and the rest".to_string()));
        }
    }

    let mut out = String::new();
    out.push_str("# HTTP API reference\n\n");
    out.push_str(&generated_note(
        "the handlers' annotations and the questions' declarations (`service::ask`), the source of `openapi/openapi.json`",
    ));
    out.push_str(
        "\nEvery operation the server routes, grouped as the OpenAPI document groups them, with every query parameter \
         its handler accepts: a parameter not listed is refused (400 `unknown_parameter`, naming the ones that are). \
         `{domain}` is `llm` or `diffusion`; a parameter only one domain takes names it under *Domains*, and the \
         document also lists each domain's copy (`/v1/llm/...`, `/v1/diffusion/...`). Field names are those of \
         [the fields reference](fields.md). Semantics and examples: [the HTTP API guide](../http-api.md); the \
         interactive form: `/docs` on a running server.\n\n",
    );
    let sections: Vec<(&String, &String, Vec<&Op>)> = groups
        .iter()
        .map(|(tag, description)| {
            let members: Vec<&Op> = ops
                .iter()
                .filter(|(t, _)| t == tag)
                .map(|(_, o)| o)
                .collect();
            (tag, description, members)
        })
        .filter(|(_, _, members)| !members.is_empty())
        .collect();
    for (tag, description, _) in &sections {
        writeln!(out, "- [{tag}](#{}): {description}", anchor(tag)).unwrap();
    }
    writeln!(
        out,
        "- [Problems](#problems): the refusals' shared definitions"
    )
    .unwrap();

    for (tag, description, members) in &sections {
        write!(
            out,
            "\n## {tag}\n\n{description}.\n\n| Operation | Summary |\n|---|---|\n"
        )
        .unwrap();
        for o in members.iter() {
            let h = heading(o.method, o.path);
            writeln!(
                out,
                "| [`{h}`](#{}) | {} |",
                anchor(&h),
                cell(o.op["summary"].as_str().unwrap_or_default())
            )
            .unwrap();
        }
        for o in members.iter() {
            let h = heading(o.method, o.path);
            write!(out, "\n### {h}\n\n").unwrap();
            if let Some(s) = o.op["summary"].as_str() {
                writeln!(out, "{s}").unwrap();
            }
            if let Some(d) = o.op["description"].as_str() {
                write!(out, "\n{}\n", d.trim()).unwrap();
            }
            if concrete.contains(o.path) {
                let copies: Vec<String> = Domain::ALL
                    .iter()
                    .map(|d| format!("`{}`", o.path.replace("{domain}", d.as_str())))
                    .filter(|p| paths.contains_key(p.trim_matches('`')))
                    .collect();
                write!(out, "\nAlso routed as {}.\n", copies.join(" and ")).unwrap();
            }
            if o.rows.is_empty() {
                out.push_str("\nNo parameters.\n");
            } else {
                let with_domains = o.rows.iter().any(|r| !r.domains.is_empty());
                out.push_str(if with_domains {
                    "\n| Parameter | In | Domains | Takes | Meaning |\n|---|---|---|---|---|\n"
                } else {
                    "\n| Parameter | In | Takes | Meaning |\n|---|---|---|---|\n"
                });
                for r in &o.rows {
                    let domains = if with_domains {
                        format!(" {} |", r.domains)
                    } else {
                        String::new()
                    };
                    writeln!(
                        out,
                        "| `{}` | {} |{domains} {} | {} |",
                        r.name,
                        r.place,
                        cell(&r.takes),
                        cell(&r.meaning)
                    )
                    .unwrap();
                }
            }
            write!(out, "\n{}\n", answers(o.op)).unwrap();
        }
    }

    out.push_str(
        "\n## Problems\n\nEvery refusal is an RFC 9457 `application/problem+json` document with a stable `type` \
         (`/problems/<slug>`), the `parameter` it is about and, where they can be listed, the `allowed` values. \
         Every problem type:\n\n| Status | `type` slug | When |\n|---|---|---|\n",
    );
    for p in PROBLEM_TYPES {
        writeln!(out, "| {} | `{}` | {} |", p.status, p.slug, cell(p.when)).unwrap();
    }
    out.push_str(
        "\nAn operation's refusals above link to these shared definitions of the document, one per status:\n",
    );
    let mut problems: Vec<&(u16, &str, &str)> = PROBLEMS.iter().collect();
    problems.sort_by_key(|p| p.0);
    for (status, name, description) in problems {
        write!(out, "\n### {status} {name}\n\n{description}\n").unwrap();
    }
    out
}

fn type_name(ty: FieldType) -> &'static str {
    match ty {
        FieldType::String => "string",
        FieldType::Int64 => "integer",
        FieldType::Double => "number",
        FieldType::Bool => "boolean",
    }
}

/// `docs/reference/fields.md`: every run field of each domain with its type, unit, whether it
/// may be null, the filter parameters on it, and what it means.
pub fn fields_markdown() -> String {
    let mut out = String::from("# Run fields\n\n");
    out.push_str(&generated_note(
        "the field catalog (`engine::fields`) and the filters' declarations",
    ));
    out.push_str(
        "\nThe fields of a run, as `/v1/{domain}/runs` answers them, `GET /v1/{domain}/fields` lists them and the \
         SQL tables `llm_runs` and `diffusion_runs` hold them. *Filters* are the query parameters that select on \
         the field (a numeric filter takes exact values, or a range with `_min`/`_max`).\n",
    );
    for domain in Domain::ALL {
        let title = match domain {
            Domain::Llm => "LLM runs",
            Domain::Diffusion => "Diffusion runs",
        };
        write!(
            out,
            "\n## {title}\n\n| Field | Type | Unit | Null | Filters | Meaning |\n|---|---|---|---|---|---|\n"
        )
        .unwrap();
        let strings = ask::string_filters(domain);
        let numbers = ask::numeric_filters(domain);
        let fields = std::iter::once(&RUN_ID)
            .chain(published_fields(domain).iter())
            .chain(derived_fields(domain).iter());
        for f in fields {
            let mut filters: Vec<String> = Vec::new();
            for (param, field, aliases) in strings {
                if *field == f.name {
                    filters.push(param.to_string());
                    filters.extend(aliases.iter().map(|a| a.to_string()));
                }
            }
            for (param, aliases) in numbers {
                if *param == f.name {
                    filters.extend([
                        param.to_string(),
                        format!("{param}_min"),
                        format!("{param}_max"),
                    ]);
                    filters.extend(aliases.iter().map(|a| a.to_string()));
                }
            }
            if f.name == "is_stable" && domain == Domain::Llm {
                filters.push("stability".into());
            }
            writeln!(
                out,
                "| `{}` | {} | {} | {} | {} | {} |",
                f.name,
                type_name(f.ty),
                f.unit.unwrap_or(""),
                if f.nullable { "yes" } else { "" },
                code_list(&filters),
                cell(f.description)
            )
            .unwrap();
        }
    }
    out
}
