//! `data/sample` is exactly what `mlenergy-server sample` builds from the shared run tables.

use std::path::PathBuf;

use mlenergy_server::rawtree::sample::build_sample;

/// `shared/data/real` beside the repository (where CI puts it), or `MLENERGY_SHARED_REAL`.
fn shared_real() -> PathBuf {
    std::env::var_os("MLENERGY_SHARED_REAL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/real"))
}

#[test]
fn committed_sample_equals_the_tool_output() {
    let real = shared_real();
    assert!(
        real.join("llm_runs.jsonl").is_file(),
        "the shared run tables are expected at {}",
        real.display()
    );
    let out = tempfile::tempdir().unwrap();
    build_sample(&real, out.path()).unwrap();
    let committed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/sample");
    // The generated raw files: exactly three, at the paths the parquet rows name.
    let raw: Vec<String> = walkdir::WalkDir::new(out.path())
        .into_iter()
        .flatten()
        .filter(|e| e.file_name() == "results.json")
        .map(|e| {
            e.path()
                .strip_prefix(out.path())
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(raw.len(), 3, "{raw:?}");
    for rel in [
        "runs/llm.parquet",
        "runs/diffusion.parquet",
        "histograms/llm_output_lengths.parquet",
        "README.md",
    ]
    .into_iter()
    .map(String::from)
    .chain(raw)
    {
        let built = std::fs::read(out.path().join(&rel)).unwrap();
        let kept = std::fs::read(committed.join(&rel))
            .unwrap_or_else(|e| panic!("data/sample/{rel}: {e}"));
        assert!(
            built == kept,
            "data/sample/{rel} differs from the tool output: run `cargo run -- sample`"
        );
    }
}
