//! Any query string on any GET endpoint that takes one (the first byte picks the endpoint): every
//! answer is a success or a 4xx problem+json, never a 5xx or a panic.

#![no_main]

use axum::body::Body;
use axum::http::Request;
use libfuzzer_sys::fuzz_target;

#[path = "app.rs"]
mod app;

const PATHS: &[&str] = &[
    "/v1/llm/runs",
    "/v1/diffusion/runs",
    "/v1/llm/runs/{llm}",
    "/v1/llm/groups",
    "/v1/diffusion/groups",
    "/v1/llm/best",
    "/v1/diffusion/best",
    "/v1/llm/pareto",
    "/v1/diffusion/pareto",
    "/v1/llm/fits/logistic",
    "/v1/diffusion/fits/logistic",
    "/v1/llm/runs/{llm}/itl",
    "/v1/llm/runs/{llm}/output-lengths",
    "/v1/llm/runs/{llm}/timeline",
    "/v1/diffusion/runs/{diffusion}/timeline",
    "/v1/llm/runs/{llm}/itl-mixture",
    "/v1/llm/itl",
    "/v1/llm/output-lengths",
    "/v1/llm/timelines",
    "/v1/llm/fits/itl-mixture",
    "/v1/llm/charts/pareto.svg",
    "/v1/llm/charts/sweep.svg",
    "/v1/llm/runs/{llm}/timeline.svg",
    "/v1/llm/runs/{llm}/itl.svg",
    "/v1/llm/runs/{llm}/raw/results.json",
    "/v1/sql",
    "/v1/sql/tables",
    "/v1/llm/fields",
    "/leaderboard/data/index.json",
    "/",
    "/explore/llm",
    "/explore/diffusion",
    "/explore/llm/runs/{llm}",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, query)) = data.split_first() else {
        return;
    };
    let path = app::with_runs(PATHS[pick as usize % PATHS.len()]);
    // Bytes a request target cannot carry are sent percent-encoded; the rest as they are, `%`
    // included (malformed escapes are part of the input).
    let mut target = path;
    target.push('?');
    for &b in query {
        if (0x21..0x7f).contains(&b) && b != b'#' {
            target.push(b as char);
        } else {
            target.push_str(&format!("%{b:02X}"));
        }
    }
    let Ok(req) = Request::get(target.as_str()).body(Body::empty()) else {
        return;
    };
    app::check(req);
});
