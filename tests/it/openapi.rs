//! The committed `openapi/openapi.json` is the document the code generates. Regenerate with
//! `UPDATE_OPENAPI=1 cargo test --test it openapi`.

use std::path::PathBuf;

#[test]
fn committed_openapi_matches_the_code() {
    let doc = mlenergy_server::http::openapi_document()
        .to_pretty_json()
        .unwrap()
        + "\n";
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("openapi/openapi.json");
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &doc).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == doc,
        "openapi/openapi.json is out of date with the code; run `UPDATE_OPENAPI=1 cargo test --test it openapi`"
    );
}

/// The query parameter names an operation documents: each parameter, and for an object written as
/// separate parameters (`style: form, explode: true`, a numeric filter), its properties.
fn documented_query_names(op: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for p in op["parameters"].as_array().into_iter().flatten() {
        if p["in"] != "query" {
            continue;
        }
        match p["schema"]["properties"].as_object() {
            Some(props) if p["schema"]["type"] == "object" => out.extend(props.keys().cloned()),
            _ => out.push(p["name"].as_str().unwrap().to_string()),
        }
    }
    out.sort();
    out
}

/// For every operation of the document, the query parameters it lists are exactly the ones its
/// handler accepts: asked with an unknown parameter, the handler refuses it and lists what it
/// takes (400 `unknown_parameter`), and that list equals the document's (for `{domain}`
/// operations, the parameters of both domains); an operation that lists none ignores it.
#[tokio::test]
async fn every_operation_documents_exactly_the_parameters_its_handler_accepts() {
    let app = crate::common::TestApp::sample().await;
    let doc: serde_json::Value =
        serde_json::from_str(&mlenergy_server::http::openapi_document().to_json().unwrap())
            .unwrap();
    let llm_run = "video-chat~Qwen--Qwen3-VL-30B-A3B-Instruct~H100~g2~b8~r1";
    let diffusion_run = "text-to-image~Efficient-Large-Model--SANA1.5_1.6B_1024px_diffusers~B200~g2~b1~1024x1024~s20~u1~r2";
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let documented = documented_query_names(op);
            let domains: Vec<&str> = if path.contains("{domain}") {
                vec!["llm", "diffusion"]
            } else if path.starts_with("/v1/diffusion") {
                vec!["diffusion"]
            } else {
                vec!["llm"]
            };
            // What a {domain} operation documents is what both domains accept.
            let mut accepted: Option<Vec<String>> = None;
            for d in &domains {
                let run = if *d == "llm" { llm_run } else { diffusion_run };
                let uri = path
                    .replace("{domain}", d)
                    .replace("{run_id}", run)
                    .replace("{file}", "results.json")
                    .replace("{job_id}", "no-such-job");
                let r = app
                    .request(
                        &method.to_uppercase(),
                        &format!("{uri}?zz_not_a_parameter=1"),
                        &[],
                    )
                    .await;
                let mut names: Vec<String> = if documented.is_empty() && r.status != 400 {
                    Vec::new()
                } else {
                    let p = r.problem(400, "unknown_parameter");
                    p["allowed"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap().to_string())
                        .collect()
                };
                names.sort();
                accepted = Some(match accepted {
                    None => names,
                    Some(prev) => prev.into_iter().filter(|n| names.contains(n)).collect(),
                });
            }
            let accepted = accepted.unwrap();
            // `batch` means max_num_seqs for one domain and batch_size for the other, so a
            // {domain} operation leaves it to the concrete ones.
            let accepted: Vec<String> = if path.contains("{domain}") {
                accepted
                    .into_iter()
                    .filter(|n| !n.starts_with("batch"))
                    .collect()
            } else {
                accepted
            };
            assert_eq!(documented, accepted, "{method} {path}");
            checked += 1;
        }
    }
    assert!(checked >= 30, "{checked} operations checked");
}
