//! Any body on the endpoints that read one (the first byte picks the endpoint and the content
//! type): a success or a 4xx problem+json, never a 5xx or a panic.

#![no_main]

use axum::body::Body;
use axum::http::Request;
use libfuzzer_sys::fuzz_target;

// `with_runs` is for the query targets.
#[allow(dead_code)]
#[path = "app.rs"]
mod app;

const POSTS: &[(&str, &str)] = &[
    ("/v1/models/logistic/fit", "application/json"),
    ("/v1/models/logistic/eval", "application/json"),
    ("/v1/models/itl-mixture/fit", "application/json"),
    ("/v1/models/itl-mixture/sample", "application/json"),
    ("/v1/sql", "application/json"),
    ("/v1/sql", "text/plain"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let (path, content_type) = POSTS[pick as usize % POSTS.len()];
    let req = Request::post(path)
        .header("content-type", content_type)
        .body(Body::from(body.to_vec()))
        .unwrap();
    app::check(req);
});
