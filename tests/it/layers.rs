//! The server crate's own layers import downward only. Top to bottom: `config` → `server` (the
//! front ends on one listener) → `mcp` (the Model Context Protocol) → `http` (axum:
//! extract, call, encode) → `service` (the snapshot, derived data, jobs) → `rawtree` (raw tree →
//! run rows → compiled directory) → `store` (sources, cache, catalog); `chart` (SVG drawing) is a
//! leaf `service` uses (its door draws the charts); `pg` (the PostgreSQL wire protocol) and `flight` (Flight SQL) stand beside
//! `http`. Below them all are the workspace's crates the server re-exports under their layer names
//! (`engine`, `peer`, `rawfile`, `pycompat`): Cargo keeps their own order (each crate's
//! Cargo.toml), so this test only checks which of them each layer of the server may name. It reads
//! every source file of `src/` and fails on a `crate::` path (outside comments) that names a layer
//! or crate the file's layer may not use.

use std::collections::BTreeMap;
use std::path::Path;

/// The workspace's crates, re-exported by the server under these names.
const CRATES: &[&str] = &["engine", "peer", "rawfile", "pycompat"];

/// What each of the server's layers may import.
fn allowed(layer: &str) -> Option<&'static [&'static str]> {
    Some(match layer {
        "config" => &[
            "server", "mcp", "http", "pg", "flight", "service", "engine", "rawtree", "peer",
            "rawfile", "store", "pycompat", "chart",
        ],
        "server" => &["mcp", "http", "service", "engine"],
        "mcp" => &["http", "service", "engine", "rawfile"],
        "http" => &[
            "service", "engine", "rawtree", "peer", "rawfile", "store", "pycompat",
        ],
        "pg" => &["service", "engine"],
        "flight" => &["service", "engine"],
        "service" => &[
            "engine", "rawtree", "peer", "rawfile", "store", "pycompat", "chart",
        ],
        "rawtree" => &["engine", "rawfile", "store", "pycompat"],
        "store" => &["rawfile", "pycompat"],
        "chart" => &[],
        _ => return None,
    })
}

/// Whether `name` is one of the server's layers or a crate re-exported as one.
fn known(name: &str) -> bool {
    allowed(name).is_some() || CRATES.contains(&name)
}

fn ident(text: &str) -> String {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The first names of a `{a, b::c, d::{e}}` group (`text` starts after the `{`).
fn group_heads(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut head) = (0usize, true);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => head = true,
            c if head && (c.is_ascii_alphanumeric() || c == '_') => {
                out.push(ident(&text[i..]));
                head = false;
            }
            _ => {}
        }
    }
    out
}

/// Layers named in `text` (a file at `module`, its module path under `src/`, e.g. `["http",
/// "encode", "frames"]`): by `crate::<layer>` (or `$crate::`), in a `crate::{...}` group, or by
/// enough `super::` to climb to the crate's root; outside `//` comments.
fn named_layers_in(text: &str, module: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    // A file's `use` group may span lines: read the code without its comments as one text.
    let code: String = text
        .lines()
        .map(|line| match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        match after.strip_prefix('{') {
            Some(group) => out.extend(group_heads(group)),
            None => {
                let name = ident(after);
                if !name.is_empty() {
                    out.push(name);
                }
            }
        }
        rest = after;
    }
    let mut rest = code.as_str();
    while let Some(i) = rest.find("super::") {
        // Only the first `super` of a chain, and not one inside a longer name.
        let before = code.len() - rest.len() + i;
        let prev = code[..before].chars().next_back();
        let mut after = &rest[i..];
        rest = &rest[i + "super::".len()..];
        if prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut climbs = 0;
        while let Some(a) = after.strip_prefix("super::") {
            climbs += 1;
            after = a;
        }
        if climbs >= module.len() {
            match after.strip_prefix('{') {
                Some(group) => out.extend(group_heads(group)),
                None => out.push(ident(after)),
            }
        }
    }
    out
}

/// Layers named by a file deep enough that `super::` never reaches the root.
fn named_layers(text: &str) -> Vec<String> {
    named_layers_in(text, &["a", "b", "c", "d", "e", "f"])
}

#[test]
fn every_layer_imports_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut violations: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut files = 0;
    for entry in walkdir::WalkDir::new(&src).into_iter().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let layer = first.trim_end_matches(".rs").to_string();
        let Some(ok) = allowed(&layer) else {
            // main.rs (the binary) and lib.rs (the module list) sit above every layer.
            assert!(
                layer == "main" || layer == "lib",
                "{} is in no known layer: add it to the layer list",
                rel.display()
            );
            continue;
        };
        files += 1;
        let text = std::fs::read_to_string(path).unwrap();
        // The module path: `http/encode/frames.rs` is http::encode::frames, `http/mod.rs` is http.
        let mut module: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        let module: Vec<&str> = module.iter().map(String::as_str).collect();
        for named in named_layers_in(&text, &module) {
            if named != layer && known(&named) && !ok.contains(&named.as_str()) {
                violations
                    .entry(rel.display().to_string())
                    .or_default()
                    .push(named);
            }
        }
    }
    assert!(files > 40, "the source tree was found ({files} files)");
    assert!(
        violations.is_empty(),
        "imports against the layering: {violations:?}"
    );
}

#[test]
fn the_check_sees_an_upward_import() {
    let text = "use crate::engine::Domain; // crate::http in a comment is not an import\n\
                fn f() { crate::http::state::parse_domain(\"llm\"); }";
    assert_eq!(named_layers(text), ["engine", "http"]);
    // A group, over lines, and its nested paths' heads.
    let text = "use crate::{\n    engine::Domain, // crate::chart\n    http::{state, error::AppError},\n};";
    assert_eq!(named_layers(text), ["engine", "http"]);
    // `super::super` that climbs to the root from `store/cache.rs` (store::cache) names a layer;
    // one `super` does not.
    let text = "use super::super::http::state; use super::fetch::Upstream; use super::{bound, x};";
    assert_eq!(named_layers_in(text, &["store", "cache"]), ["http"]);
    assert_eq!(
        named_layers_in("use super::{http, fetch};", &["store"]),
        ["http", "fetch"]
    );
}
