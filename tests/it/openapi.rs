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
