//! The layers import downward only. Top to bottom: `config` → `http` (axum: extract, call,
//! encode) → `service` (the snapshot, derived data, jobs) → `engine` (run tables, queries) and
//! `rawtree` (raw tree → run rows → compiled directory, using engine's tables) → `rawfile`
//! (reading one results.json) → `store` (sources, cache, catalog) → `pycompat` (leaf); `chart` (SVG drawing) is a leaf `http`
//! uses; `pg` (the PostgreSQL wire protocol) and `flight` (Flight SQL) stand beside `http`. This test
//! reads every source file and fails on a `crate::` path (outside comments) that names a layer
//! the file's layer may not use.

use std::collections::BTreeMap;
use std::path::Path;

/// What each layer may import.
fn allowed(layer: &str) -> Option<&'static [&'static str]> {
    Some(match layer {
        "config" => &[
            "http", "pg", "flight", "service", "engine", "rawtree", "peer", "rawfile", "store",
            "pycompat", "chart",
        ],
        "http" => &[
            "service", "engine", "rawtree", "peer", "rawfile", "store", "pycompat", "chart",
        ],
        "pg" => &["service", "engine"],
        "flight" => &["service", "engine"],
        "service" => &["engine", "rawtree", "peer", "rawfile", "store", "pycompat"],
        "peer" => &["engine", "store", "pycompat"],
        "rawtree" => &["engine", "rawfile", "store", "pycompat"],
        "engine" => &["pycompat"],
        "rawfile" => &["pycompat"],
        "store" => &["pycompat"],
        "pycompat" => &[],
        "chart" => &[],
        _ => return None,
    })
}

/// Layers named by `crate::<layer>` (or `$crate::`) in `text`, outside `//` comments.
fn named_layers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
            rest = after;
        }
    }
    out
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
        for named in named_layers(&text) {
            if named != layer && allowed(&named).is_some() && !ok.contains(&named.as_str()) {
                violations
                    .entry(rel.display().to_string())
                    .or_default()
                    .push(named);
            }
        }
    }
    assert!(files > 50, "the source tree was found ({files} files)");
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
}
