//! The generated reference pages in `docs/reference/` are what the code writes: a parameter,
//! an endpoint, a field or a flag declared differently without writing the pages again fails
//! here. Write them again with `UPDATE_DOCS=1 cargo test --test it reference`.

use std::path::PathBuf;

fn check(name: &str, text: String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("docs/reference")
        .join(name);
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "docs/reference/{name} is out of date with the code; run `UPDATE_DOCS=1 cargo test --test it reference`"
    );
}

#[test]
fn the_http_reference_is_the_declarations() {
    check("http.md", mlenergy_server::http::reference::http_markdown());
}

#[test]
fn the_fields_reference_is_the_field_catalog() {
    check(
        "fields.md",
        mlenergy_server::http::reference::fields_markdown(),
    );
}

/// The flags of the default features (the protocol front ends each add theirs).
#[cfg(all(feature = "pg", feature = "flight", feature = "mcp"))]
#[test]
fn the_flags_reference_is_the_command_line() {
    check(
        "flags.md",
        mlenergy_server::config::reference::flags_markdown(),
    );
}

/// The generated HTTP reference lists every operation of the OpenAPI document (its templated
/// ones with their domain copies) and every parameter the document gives an operation.
#[test]
fn the_http_reference_lists_every_operation_and_parameter() {
    let text = mlenergy_server::http::reference::http_markdown();
    let doc: serde_json::Value =
        serde_json::from_str(&mlenergy_server::http::openapi_document().to_json().unwrap())
            .unwrap();
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let templated = ["llm", "diffusion"].iter().fold(path.clone(), |p, d| {
                p.replace(&format!("/v1/{d}/"), "/v1/{domain}/")
            });
            let shown = if doc["paths"].get(&templated).is_some() {
                &templated
            } else {
                path
            };
            let heading = format!("### {} {shown}\n", method.to_uppercase());
            let at = text
                .find(&heading)
                .unwrap_or_else(|| panic!("{heading:?} is not in the reference"));
            let section = &text[at..];
            let section = &section[..section[4..].find("\n### ").map_or(section.len(), |i| i + 4)];
            for p in op["parameters"].as_array().into_iter().flatten() {
                if p["name"] == "domain" {
                    continue;
                }
                let names: Vec<String> = match p["schema"]["properties"].as_object() {
                    Some(props) => props.keys().cloned().collect(),
                    None => vec![p["name"].as_str().unwrap().to_string()],
                };
                for n in names {
                    assert!(
                        section.contains(&format!("| `{n}` |")),
                        "{heading}: {n} is not in its table"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 500, "{checked}");
}

#[cfg(feature = "mcp")]
#[test]
fn the_mcp_reference_is_the_tool_catalog() {
    check("mcp.md", mlenergy_server::mcp::reference::mcp_markdown());
}
