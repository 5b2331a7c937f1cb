//! The explorer's pages as HTML, from maud templates: every value spliced in (a model name, a
//! filter value, the Host header) is escaped by the template; nothing is written unescaped but the
//! fixed markup. No inline script or style: the page's script and style sheet are files of the
//! server (`/explore/assets/`), so a strict Content-Security-Policy holds.

use maud::{DOCTYPE, Markup, html};

use crate::engine::Domain;

/// What every page shows around its content.
pub(super) struct Chrome<'a> {
    pub(super) title: &'a str,
    pub(super) snapshot: &'a str,
    pub(super) source: &'a str,
    /// This page pinned to its snapshot's commit (or id).
    pub(super) permalink: &'a str,
    /// The dataset's BibTeX at this revision, accessed today.
    pub(super) cite: &'a str,
}

/// A whole page: the navigation, `content`, and the snapshot served.
pub(super) fn page(chrome: &Chrome<'_>, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (chrome.title) " · mlenergy-server" }
                link rel="icon" href="/explore/assets/icon.svg" type="image/svg+xml";
                link rel="stylesheet" href="/explore/assets/explore.css";
                script src="/explore/assets/explore.js" defer {}
            }
            body {
                a.skip href="#main" { "Skip to the content" }
                header {
                    nav aria-label="Site" {
                        a href="/" { "mlenergy-server" }
                        a href="/explore/llm" { "LLM runs" }
                        a href="/explore/diffusion" { "Diffusion runs" }
                        a href="/explore/llm/changes" { "What changed" }
                        a href="/docs" { "API documentation" }
                    }
                }
                main #main { (content) }
                footer {
                    p {
                        "Snapshot " code { (chrome.snapshot) } " of " code { (chrome.source) } ". "
                        a rel="bookmark" href=(chrome.permalink) { "Permalink" } " (this page at this revision)."
                    }
                    details.cite {
                        summary { "Cite" }
                        pre { code { (chrome.cite) } }
                    }
                }
            }
        }
    }
}

/// A domain's name as a heading says it.
pub(super) fn domain_title(domain: Domain) -> &'static str {
    match domain {
        Domain::Llm => "LLM runs",
        Domain::Diffusion => "Diffusion runs",
    }
}

/// One domain's counts on the home page.
pub(super) struct DomainFacts {
    pub(super) domain: Domain,
    pub(super) rows: usize,
    pub(super) stable: usize,
    pub(super) unstable: usize,
}

/// The home page's facts: what is served and what else listens.
pub(super) struct Home {
    pub(super) origin: String,
    pub(super) source: String,
    pub(super) revision: Option<String>,
    pub(super) snapshot: String,
    pub(super) loaded_at: String,
    pub(super) domains: Vec<DomainFacts>,
    pub(super) leaderboard_ui: bool,
    pub(super) pg: Option<String>,
    pub(super) flight: Option<String>,
    pub(super) mcp: bool,
    pub(super) mirror: bool,
}

pub(super) fn home(h: &Home) -> Markup {
    let sql = format!(
        "curl -G {} --data-urlencode \"q=SELECT model_id, min(energy_per_token_joules) AS e FROM llm_runs WHERE is_stable GROUP BY model_id ORDER BY e LIMIT 5\"",
        super::snippets::shell_word(&format!("{}/v1/sql", h.origin))
    );
    let python = format!(
        "from mlenergy_client import LLMRuns\nruns = LLMRuns.from_server({}).task(\"gpqa\").to_dataframe()",
        super::snippets::python_str(&h.origin)
    );
    html! {
        h1 { "ML.ENERGY benchmark data" }
        p {
            "Measured GPU energy, throughput and latency of LLM and diffusion inference runs "
            "(the ML.ENERGY benchmark v3), to browse here or to query over HTTP, SQL and Python."
        }
        section aria-labelledby="served" {
            h2 #served { "What is served" }
            dl.facts {
                dt { "Source" } dd { code { (h.source) } }
                dt { "Revision" } dd { @if let Some(r) = &h.revision { code { (r) } } @else { "a local directory (no revision)" } }
                dt { "Snapshot" } dd { code { (h.snapshot) } }
                dt { "Loaded" } dd { time datetime=(h.loaded_at) { (h.loaded_at) } }
            }
            table {
                caption { "Runs per domain" }
                thead { tr { th scope="col" { "Domain" } th scope="col" { "Runs" } th scope="col" { "Stable" } th scope="col" { "Unstable" } } }
                tbody {
                    @for d in &h.domains {
                        tr {
                            th scope="row" { a href={ "/explore/" (d.domain.as_str()) } { (domain_title(d.domain)) } }
                            td.num { (d.rows) }
                            td.num { (d.stable) }
                            td.num { (d.unstable) }
                        }
                    }
                }
            }
        }
        section aria-labelledby="use" {
            h2 #use { "Use it" }
            ul.links {
                li { a href="/explore/llm" { "Explore the LLM runs" } " and " a href="/explore/diffusion" { "the diffusion runs" } ": filter, facet, sort, charts, and every view as curl, Python and SQL." }
                li { a href="/docs" { "API documentation" } " (Swagger UI) and " a href="/openapi.json" { "the OpenAPI document" } "; " code { "curl " (h.origin) "/" } " lists the endpoint families." }
                li {
                    @if h.leaderboard_ui { a href="/leaderboard/" { "The leaderboard" } ", and its data at " } @else { "The leaderboard's data at " }
                    a href="/leaderboard/data/index.json" { code { "/leaderboard/data/" } }
                    "."
                }
                li { a href="/v1/sql/tables" { "SQL over HTTP" } " (tables " code { "llm_runs" } ", " code { "diffusion_runs" } " and the raw-derived ones):" }
            }
            pre { code { (sql) } }
            h3 { "PostgreSQL wire protocol and Flight SQL" }
            @match &h.pg {
                Some(addr) => {
                    p { "psql, Grafana and Metabase connect to " code { (addr) } " (any user and database name):" }
                    pre { code { "psql -h " (host_of(addr)) " -p " (port_of(addr)) " -U grafana -d mlenergy -c '\\dt'" } }
                },
                None => p { "Off on this server; start it with " code { "--pg-bind 127.0.0.1:5432" } " for psql, Grafana and Metabase." },
            }
            @match &h.flight {
                Some(addr) => p { "Arrow Flight SQL (ADBC, JDBC, Grafana) at " code { "grpc://" (addr) } "." },
                None => p { "Arrow Flight SQL is off; start with " code { "--flight-bind 127.0.0.1:50051" } "." },
            }
            h3 { "Python" }
            p { "The client (" code { "pip install ./clients/python" } " from the repository) has the reference toolkit's records API:" }
            pre { code { (python) } }
            @if h.mirror {
                p { "The unmodified toolkit reads this server as its Hugging Face Hub: " code { "HF_ENDPOINT=" (h.origin) "/hub" } "." }
            }
            h3 { "AI assistants" }
            @if h.mcp {
                p { "The Model Context Protocol (streamable HTTP) at " code { (h.origin) "/mcp" } ":" }
                pre { code { "{\"mcpServers\": {\"mlenergy\": {\"url\": \"" (h.origin) "/mcp\"}}}" } }
            } @else {
                p { "The Model Context Protocol endpoint is off on this server." }
            }
        }
    }
}

fn host_of(addr: &str) -> &str {
    addr.rsplit_once(':').map_or(addr, |(h, _)| h)
}

fn port_of(addr: &str) -> &str {
    addr.rsplit_once(':').map_or("5432", |(_, p)| p)
}

/// One filter of the form: its parameter, its label, the values the snapshot holds (with the
/// runs each would match given the other filters) and the values chosen.
pub(super) struct Control {
    pub(super) param: &'static str,
    pub(super) label: String,
    pub(super) options: Vec<(String, usize)>,
    pub(super) chosen: Vec<String>,
    /// Each value's link: this view with the value added to or removed from the filter.
    pub(super) toggles: Vec<String>,
    /// A numeric field's histogram over the matching runs: counts and bin edges.
    pub(super) histogram: Option<(Vec<f64>, Vec<f64>)>,
}

/// A field of the form that is typed in.
pub(super) struct Input {
    pub(super) param: String,
    pub(super) label: String,
    pub(super) value: String,
    pub(super) numeric: bool,
}

/// A column of the runs table.
pub(super) struct Column {
    pub(super) name: &'static str,
    pub(super) unit: Option<&'static str>,
    pub(super) numeric: bool,
    /// `ascending` or `descending` when the table is sorted by it first.
    pub(super) sorted: Option<&'static str>,
    pub(super) sort_link: String,
}

/// A row: its run id and its cells as shown, with the full value where it was shortened.
pub(super) struct Row {
    pub(super) run_id: String,
    pub(super) cells: Vec<(String, Option<String>)>,
}

/// The best configuration per model under the deadline.
pub(super) struct Best {
    /// The deadline applied and what it is (`500 ms median_itl_ms`), or none.
    pub(super) deadline: Option<String>,
    pub(super) deadline_default: bool,
    pub(super) columns: Vec<Column>,
    pub(super) rows: Vec<Row>,
    pub(super) more: usize,
    pub(super) json: String,
}

/// The copyable forms of a view.
pub(super) struct Snippets {
    pub(super) curl: String,
    pub(super) python: String,
    pub(super) sql: String,
    pub(super) sql_link: String,
}

pub(super) struct Explorer {
    pub(super) domain: Domain,
    pub(super) action: String,
    pub(super) total: usize,
    pub(super) offset: usize,
    pub(super) limit: usize,
    pub(super) controls: Vec<Control>,
    /// The form's typed fields: the numeric ranges and run ids.
    pub(super) inputs: Vec<Input>,
    pub(super) stability: Option<String>,
    /// The view's other parameters (`sort`, `fields`, `run_id`, ...), kept by the form.
    pub(super) hidden: Vec<(String, String)>,
    pub(super) deadline_value: String,
    pub(super) deadline_unit: &'static str,
    pub(super) columns: Vec<Column>,
    pub(super) rows: Vec<Row>,
    pub(super) prev: Option<String>,
    pub(super) next: Option<String>,
    pub(super) warnings: Vec<String>,
    pub(super) pareto: String,
    pub(super) sweep: Result<String, String>,
    pub(super) best: Best,
    pub(super) snippets: Snippets,
}

fn runs_table(domain: Domain, caption: &str, columns: &[Column], rows: &[Row]) -> Markup {
    html! {
        div.scroll {
            table.runs {
                caption { (caption) }
                thead {
                    tr {
                        th scope="col" { "run_id" }
                        @for c in columns {
                            th scope="col" class=[c.numeric.then_some("num")] aria-sort=(c.sorted.unwrap_or("none")) {
                                @if c.sort_link.is_empty() { (c.name) } @else { a href=(c.sort_link) { (c.name) } }
                                @if let Some(u) = c.unit { br; span.unit { "(" (u) ")" } }
                            }
                        }
                    }
                }
                tbody {
                    @for r in rows {
                        tr {
                            th scope="row" { a href=(run_href(domain, &r.run_id)) { (r.run_id) } }
                            @for (i, (shown, full)) in r.cells.iter().enumerate() {
                                td class=[columns.get(i).and_then(|c| c.numeric.then_some("num"))] title=[full] { (shown) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The link of a run's page (the id percent-encoded as a path segment).
pub(super) fn run_href(domain: Domain, run_id: &str) -> String {
    format!("/explore/{}/runs/{}", domain.as_str(), path_segment(run_id))
}

/// `s` percent-encoded but its unreserved characters.
pub(super) fn path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn snippets(s: &Snippets) -> Markup {
    html! {
        section aria-labelledby="same" {
            h2 #same { "The same question elsewhere" }
            div.snippet {
                h3 #snip-curl-label { "curl" }
                pre { code #snip-curl { (s.curl) } }
                button.copy type="button" data-copy="snip-curl" hidden { "Copy" }
            }
            div.snippet {
                h3 { "Python" }
                pre { code #snip-python { (s.python) } }
                button.copy type="button" data-copy="snip-python" hidden { "Copy" }
            }
            div.snippet {
                h3 { "SQL " small { "(" a href=(s.sql_link) { "run it" } ")" } }
                pre { code #snip-sql { (s.sql) } }
                button.copy type="button" data-copy="snip-sql" hidden { "Copy" }
            }
        }
    }
}

pub(super) fn explorer(e: &Explorer) -> Markup {
    let d = e.domain.as_str();
    let shown_to = (e.offset + e.rows.len()).min(e.total);
    html! {
        h1 { (domain_title(e.domain)) }
        p.summary aria-live="polite" #summary {
            strong { (e.total) } " runs match"
            @if e.total > 0 { "; rows " (e.offset + 1) "–" (shown_to) " shown" }
            "."
        }
        @for w in &e.warnings { p.warning role="status" { (w) } }
        (filter_form(e))
        section aria-labelledby="facets" {
            h2 #facets { "Facets" }
            p.hint { "Runs per value, given the other filters; a value's link adds it to its filter or takes it out." }
            div.facets {
                @for c in &e.controls {
                    details open[c.param == "task" || c.param == "gpu_model" || c.param == "num_gpus" || !c.chosen.is_empty()] {
                        summary { (c.label) }
                        @if let Some((hist, edges)) = &c.histogram { (histogram(c.param, hist, edges)) }
                        ul {
                            @for ((v, n), href) in c.options.iter().zip(&c.toggles) {
                                @if *n > 0 || c.chosen.contains(v) {
                                    li class=[c.chosen.contains(v).then_some("chosen")] {
                                        a href=(href) aria-pressed=(c.chosen.contains(v)) { (v) } " " span.count { (n) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        section aria-labelledby="runs" {
            h2 #runs { "Runs" }
            (runs_table(e.domain, "Matching runs (sort by a column's name; again for descending)", &e.columns, &e.rows))
            nav.pager aria-label="Pages" {
                @if let Some(p) = &e.prev { a rel="prev" href=(p) { "← Previous" } }
                span { "rows " (if e.total == 0 { 0 } else { e.offset + 1 }) "–" (shown_to) " of " (e.total) }
                @if let Some(n) = &e.next { a rel="next" href=(n) { "Next →" } }
            }
        }
        section aria-labelledby="energy" {
            h2 #energy { "Energy against latency" }
            figure {
                img src=(e.pareto) width="800" height="500" alt="The Pareto frontier of the matching runs: energy against latency, the runs on the frontier joined, the others in grey.";
                figcaption { "The Pareto frontier of the matching runs (" a href=(e.pareto) { "SVG" } ", " a href={ "/v1/" (d) "/pareto?" (e.pareto.split_once('?').map_or("", |(_, q)| q)) } { "JSON" } ")." }
            }
            h3 { "Lowest energy under a deadline" }
            @match &e.best.deadline {
                Some(dl) => p { "Deadline " strong { (dl) } @if e.best.deadline_default { " (the leaderboard's for this task)" } "; the best configuration of each model, lowest energy first (" a href=(e.best.json) { "all as JSON" } ")." },
                None => p { "No deadline (set one above, or filter one task for the leaderboard's); the lowest-energy configuration of each model (" a href=(e.best.json) { "all as JSON" } ")." },
            }
            @if e.best.rows.is_empty() {
                p { "No run meets the deadline." }
            } @else {
                (runs_table(e.domain, "Best configuration per model", &e.best.columns, &e.best.rows))
                @if e.best.more > 0 { p { "and " (e.best.more) " more models." } }
            }
            h3 { "Batch sweep" }
            @match &e.sweep {
                Ok(src) => figure {
                    img src=(src) width="800" height="500" alt="Energy per batch size with the fitted logistic curve, one series per task and GPU.";
                    figcaption { "The batch sweep with its fitted logistic curve (" a href=(src) { "SVG" } ")." }
                },
                Err(hint) => p.hint { (hint) },
            }
        }
        (snippets(&e.snippets))
    }
}

/// A small SVG histogram of a numeric facet over the matching runs.
fn histogram(param: &str, hist: &[f64], edges: &[f64]) -> Markup {
    const W: f64 = 160.0;
    const H: f64 = 36.0;
    let top = hist.iter().copied().fold(0.0, f64::max).max(1.0);
    let width = W / hist.len().max(1) as f64;
    let (lo, hi) = (
        edges.first().copied().unwrap_or(0.0),
        edges.last().copied().unwrap_or(0.0),
    );
    let label = format!("Histogram of {param} over the matching runs, {lo} to {hi}");
    html! {
        svg.histogram width=(W) height=(H) viewBox={ "0 0 " (W) " " (H) } role="img" aria-label=(label) {
            title { (label) }
            @for (i, n) in hist.iter().enumerate() {
                @let h = (n / top * (H - 2.0)).max(if *n > 0.0 { 1.0 } else { 0.0 });
                rect x=(format!("{:.1}", i as f64 * width + 0.5)) y=(format!("{:.1}", H - h)) width=(format!("{:.1}", width - 1.0)) height=(format!("{:.1}", h)) {
                    title { (format!("{} to {}: {n} runs", edges.get(i).copied().unwrap_or(0.0), edges.get(i + 1).copied().unwrap_or(0.0))) }
                }
            }
        }
    }
}

/// The explorer's filter form: a control per chosen filter, the typed inputs, stability, page
/// size and deadline, and the other parameters of the view kept hidden.
fn filter_form(e: &Explorer) -> Markup {
    html! {
        form #filters method="get" action=(e.action) {
            fieldset {
                legend { "Filters" }
                @for c in &e.controls {
                    div.control {
                        label for={ "f-" (c.param) } { (c.label) }
                        select #{ "f-" (c.param) } name=(c.param) multiple[c.chosen.len() > 1] {
                            option value="" selected[c.chosen.is_empty()] { "any" }
                            @for (v, n) in &c.options {
                                option value=(v) selected[c.chosen.contains(v)] { (v) " (" (n) ")" }
                            }
                        }
                    }
                }
                @for i in &e.inputs {
                    div.control {
                        label for={ "f-" (i.param) } { (i.label) }
                        @if i.numeric {
                            input #{ "f-" (i.param) } type="number" min="0" name=(i.param) value=(i.value);
                        } @else {
                            input #{ "f-" (i.param) } type="search" name=(i.param) value=(i.value);
                        }
                    }
                }
                @if let Some(s) = &e.stability {
                    div.control {
                        label for="f-stability" { "stability" }
                        select #f-stability name="stability" {
                            @for v in ["stable", "unstable", "all"] {
                                option value=(v) selected[s == v] { (v) }
                            }
                        }
                    }
                }
                div.control {
                    label for="f-limit" { "rows per page" }
                    select #f-limit name="limit" {
                        @for n in super::view::PAGE_SIZES {
                            option value=(n) selected[*n == e.limit] { (n) }
                        }
                        @if !super::view::PAGE_SIZES.contains(&e.limit) {
                            option value=(e.limit) selected { (e.limit) }
                        }
                    }
                }
                div.control {
                    label for="f-deadline" { "deadline (" (e.deadline_unit) ")" }
                    input #f-deadline type="number" min="0" step="any" name="deadline" value=(e.deadline_value);
                }
                @for (k, v) in &e.hidden { input type="hidden" name=(k) value=(v); }
                div.control.buttons {
                    button type="submit" { "Apply" }
                    a href=(e.action) { "Clear" }
                }
            }
        }
    }
}

/// One field of a run.
pub(super) struct FieldRow {
    pub(super) name: &'static str,
    pub(super) value: String,
    pub(super) unit: Option<&'static str>,
    pub(super) description: &'static str,
}

/// A chart of a run's raw data.
pub(super) struct RawChart {
    pub(super) title: &'static str,
    pub(super) src: String,
    pub(super) alt: &'static str,
}

/// A run's raw data: its charts, and links (href, label) to its files and derived data.
pub(super) struct RawData {
    pub(super) charts: Vec<RawChart>,
    pub(super) links: Vec<(String, String)>,
}

pub(super) struct RunPage {
    pub(super) domain: Domain,
    pub(super) run_id: String,
    pub(super) fields: Vec<FieldRow>,
    /// The charts and links of its raw data, or why there is none.
    pub(super) raw: Result<RawData, String>,
    pub(super) snippets: Snippets,
}

pub(super) fn run_page(r: &RunPage) -> Markup {
    let d = r.domain.as_str();
    html! {
        p.crumbs { a href={ "/explore/" (d) } { (domain_title(r.domain)) } " › run" }
        h1 { code { (r.run_id) } }
        section aria-labelledby="fields" {
            h2 #fields { "Every field" }
            div.scroll {
                table.fields {
                    caption { "The run's fields in output order" }
                    thead { tr { th scope="col" { "Field" } th scope="col" { "Value" } th scope="col" { "Unit" } th scope="col" { "Meaning" } } }
                    tbody {
                        @for f in &r.fields {
                            tr {
                                th scope="row" { code { (f.name) } }
                                td { (f.value) }
                                td { (f.unit.unwrap_or("")) }
                                td { (f.description) }
                            }
                        }
                    }
                }
            }
        }
        section aria-labelledby="raw" {
            h2 #raw { "From the raw results" }
            @match &r.raw {
                Ok(RawData { charts, links }) => {
                    p.hint { "Drawn from the run's raw files; the first view of a run fetches and reads them, which can take a few seconds." }
                    @for c in charts {
                        figure.raw {
                            img src=(c.src) width="800" height="500" alt=(c.alt);
                            figcaption {
                                (c.title) " (" a href=(c.src) { "SVG" } ")"
                                span.wait role="status" { " — loading…" }
                            }
                        }
                    }
                    ul.links {
                        @for (href, label) in links { li { a href=(href) { (label) } } }
                    }
                }
                Err(why) => p { "No raw data for this run: " (why) "." },
            }
        }
        (snippets(&r.snippets))
    }
}

/// A refused request as a page: the problem's status, title, detail, the parameter at fault
/// and what it accepts.
pub(super) fn problem(p: &crate::http::error::Problem, back: &str) -> Markup {
    html! {
        h1 { (p.title) }
        p.problem role="alert" { (p.detail) }
        @if let Some(param) = &p.parameter { p { "Parameter: " code { (param) } } }
        @if let Some(allowed) = &p.allowed {
            p { "Accepted: " @for (i, a) in allowed.iter().enumerate() { @if i > 0 { ", " } code { (a) } } }
        }
        p { "Status " (p.status) " · " a href=(p.type_) { (p.type_) } " · " a href=(back) { "back to the explorer" } }
    }
}

/// The changes page: the form naming two revisions, then what changed between them (the door's
/// `changes` answer): the counts per task and GPU, the largest moves, the ranks that moved, and
/// the runs added, removed and changed.
pub(super) fn changes_page(d: &str, query: &str, doc: Option<&serde_json::Value>) -> Markup {
    use serde_json::Value as J;
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let given = |k: &str| {
        pairs
            .iter()
            .find(|(p, _)| p == k)
            .map_or("", |(_, v)| v.as_str())
    };
    let shown = |v: &J| match v {
        J::Null => "—".to_string(),
        J::String(s) => s.clone(),
        other => other.to_string(),
    };
    let list = |v: &J| v.as_array().cloned().unwrap_or_default();
    let percent = |v: &J| {
        v.as_f64()
            .map_or("—".to_string(), |x| format!("{:+.2}%", x * 100.0))
    };
    html! {
        h1 { "What changed" }
        form #changes method="get" action={ "/explore/" (d) "/changes" } {
            fieldset {
                legend { "Revisions" }
                div.control {
                    label for="c-from" { "from" }
                    input #c-from type="search" name="from" required value=(given("from")) placeholder="a commit, branch, tag or snapshot name";
                }
                div.control {
                    label for="c-to" { "to" }
                    input #c-to type="search" name="to" value=(given("to")) placeholder="the served revision";
                }
                @for (k, v) in pairs.iter().filter(|(k, _)| k != "from" && k != "to") {
                    input type="hidden" name=(k) value=(v);
                }
                div.control.buttons { button type="submit" { "Compare" } }
            }
        }
        @if let Some(doc) = doc {
            @let s = &doc["summary"];
            p.summary #summary aria-live="polite" {
                strong { (s["added"]) } " runs added, " strong { (s["removed"]) } " removed, "
                strong { (s["changed"]) } " changed, from " code { (shown(&doc["from"]["content"])[..16.min(shown(&doc["from"]["content"]).len())]) }
                " to " code { (shown(&doc["to"]["content"])[..16.min(shown(&doc["to"]["content"]).len())]) } " ("
                a href={ "/v1/" (d) "/changes?" (query) } { "JSON" } ", "
                a href={ "/v1/" (d) "/changes?" (query) "&format=csv" } { "CSV" } ")."
            }
            section aria-labelledby="by-task" {
                h2 #by-task { "Per task and GPU" }
                div.scroll { table {
                    caption { "Runs added, removed and changed" }
                    thead { tr { th scope="col" { "task or GPU" } th scope="col" { "added" } th scope="col" { "removed" } th scope="col" { "changed" } } }
                    tbody {
                        @for (key, rows) in [("task", list(&s["by_task"])), ("gpu_model", list(&s["by_gpu"]))] {
                            @for r in &rows {
                                tr { th scope="row" { (shown(&r[key])) } td { (r["added"]) } td { (r["removed"]) } td { (r["changed"]) } }
                            }
                        }
                    }
                } }
            }
            section aria-labelledby="moves" {
                h2 #moves { "Largest moves" }
                div.scroll { table {
                    caption { "The changed values that moved the most" }
                    thead { tr { th scope="col" { "run" } th scope="col" { "field" } th scope="col" { "old" } th scope="col" { "new" } th scope="col" { "change" } } }
                    tbody {
                        @for m in list(&s["largest_moves"]) {
                            tr { td { a href={ "/explore/" (d) "/runs/" (shown(&m["run_id"])) } { (shown(&m["run_id"])) } } td { (shown(&m["field"])) } td { (shown(&m["old"])) } td { (shown(&m["new"])) } td { (percent(&m["relative_change"])) } }
                        }
                    }
                } }
            }
            section aria-labelledby="ranks" {
                h2 #ranks { "Ranks that moved" }
                p.hint { "Per task, each model's rank by its least energy; 1 is the least." }
                div.scroll { table {
                    caption { "Models whose rank changed, appeared or left" }
                    thead { tr { th scope="col" { "task" } th scope="col" { "model" } th scope="col" { "before" } th scope="col" { "after" } th scope="col" { "moved" } } }
                    tbody {
                        @for r in list(&doc["ranks"]).iter().filter(|r| r["moved"] != 0) {
                            tr { td { (shown(&r["task"])) } td { (shown(&r["model_id"])) } td { (shown(&r["before"])) } td { (shown(&r["after"])) } td { (shown(&r["moved"])) } }
                        }
                    }
                } }
            }
            section aria-labelledby="runs" {
                h2 #runs { "Runs" }
                @for (title, key) in [("Added", "added"), ("Removed", "removed")] {
                    h3 { (title) }
                    ul { @for id in list(&doc[key]) { li { code { (shown(&id)) } } } }
                }
                h3 { "Changed" }
                @for c in list(&doc["changed"]) {
                    details {
                        summary { code { (shown(&c["run_id"])) } " (" (list(&c["fields"]).len()) " fields)" }
                        ul { @for f in list(&c["fields"]) {
                            li { code { (shown(&f["field"])) } ": " (shown(&f["old"])) " → " (shown(&f["new"])) " (" (percent(&f["relative_change"])) ")" }
                        } }
                    }
                }
            }
        } @else {
            p.hint { "Name the revision to compare from (a hub commit, branch or tag, or a local snapshot's name); the filters of the explorer's query apply." }
        }
    }
}
