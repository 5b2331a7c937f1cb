//! Loading compiled data directories that pandas/pyarrow may have written differently from
//! data/sample: nullable ints as doubles, other string and int encodings, extra columns, raw paths.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, LargeStringArray, RecordBatch,
    StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use mlenergy_server::engine::Domain;
use mlenergy_server::engine::fields::{FieldType, published_fields};
use mlenergy_server::engine::frame::Value;
use mlenergy_server::service::RawFile;
use mlenergy_server::service::open as load;
use parquet::arrow::ArrowWriter;

/// A two-run LLM table: every published column, with the encodings pandas produces for nullable
/// ints (double with NaN: `seed` is [48105, NaN], which DataFusion with statistics collection on
/// would read back as [48105, 48105]), Int32 counts, LargeUtf8 strings, and an extra column.
fn llm_batch(results_paths: [Option<&str>; 2]) -> RecordBatch {
    let mut fields = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    for spec in published_fields(Domain::Llm) {
        let (dt, col): (DataType, ArrayRef) = match (spec.name, spec.ty) {
            ("seed", _) => (
                DataType::Float64,
                Arc::new(Float64Array::from(vec![Some(48105.0), Some(f64::NAN)])),
            ),
            ("num_request_repeats", _) => (
                DataType::Float64,
                Arc::new(Float64Array::from(vec![Some(2.0), None])),
            ),
            ("num_gpus", _) => (DataType::Int32, Arc::new(Int32Array::from(vec![1, 2]))),
            ("max_num_seqs", _) => (DataType::Int64, Arc::new(Int64Array::from(vec![64, 32]))),
            ("task", _) => (
                DataType::LargeUtf8,
                Arc::new(LargeStringArray::from(vec!["gpqa", "gpqa"])),
            ),
            ("results_path", _) => (
                DataType::Utf8,
                Arc::new(StringArray::from(results_paths.to_vec())),
            ),
            ("prometheus_path", _) => (
                DataType::Utf8,
                Arc::new(StringArray::from(vec![Some("llm/a/prometheus.json"), None])),
            ),
            ("mean_itl_ms", _) => (
                DataType::Float64,
                Arc::new(Float64Array::from(vec![Some(f64::NAN), Some(12.5)])),
            ),
            (_, FieldType::String) => (DataType::Utf8, Arc::new(StringArray::from(vec!["x", "y"]))),
            (_, FieldType::Int64) => (DataType::Int64, Arc::new(Int64Array::from(vec![1, 1]))),
            (_, FieldType::Double) => (
                DataType::Float64,
                Arc::new(Float64Array::from(vec![0.5, 0.25])),
            ),
            (_, FieldType::Bool) => (
                DataType::Boolean,
                Arc::new(BooleanArray::from(vec![true, false])),
            ),
        };
        fields.push(Field::new(spec.name, dt, true));
        cols.push(col);
    }
    fields.push(Field::new("__index_level_0__", DataType::Int64, true));
    cols.push(Arc::new(Int64Array::from(vec![0, 1])));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
}

fn write(path: &std::path::Path, batch: &RecordBatch) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

fn empty_diffusion(root: &std::path::Path) {
    // What the toolkit's builder writes for an empty collection: a parquet file with no columns.
    let batch = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(0)),
    )
    .unwrap();
    write(&root.join("runs/diffusion.parquet"), &batch);
}

#[tokio::test]
async fn pandas_encodings_load_and_raw_paths_resolve() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("runs/llm.parquet"),
        &llm_batch([Some("llm/a/results.json"), Some("/abs/results.json")]),
    );
    empty_diffusion(dir.path());
    let ds = load::load_compiled_dir(dir.path()).await.unwrap();
    assert_eq!((ds.llm.len(), ds.diffusion.len()), (2, 0));
    let get = |name: &str, row: usize| ds.llm.column(ds.llm.field_index(name).unwrap()).get(row);
    // Default order: task, model_id, gpu_model, num_gpus, ... so the num_gpus=1 run comes first.
    assert_eq!(get("num_gpus", 0), Value::Int(1));
    assert_eq!(get("seed", 0), Value::Int(48105));
    assert_eq!(get("seed", 1), Value::Null);
    assert_eq!(get("num_request_repeats", 0), Value::Int(2));
    assert_eq!(get("mean_itl_ms", 0), Value::Null);
    assert_eq!(get("task", 1), Value::Str("gpqa"));
    assert_eq!(get("run_id", 0), Value::Str("gpqa~x~x~g1~b64~r2~seed48105"));
    assert!(ds.llm.field_index("__index_level_0__").is_none());
    let root = std::path::absolute(dir.path()).unwrap();
    assert_eq!(
        local_path(&ds, Domain::Llm, 0, RawFile::Results),
        Some(root.join("llm/a/results.json"))
    );
    assert_eq!(
        local_path(&ds, Domain::Llm, 0, RawFile::Prometheus),
        Some(root.join("llm/a/prometheus.json"))
    );
    // An absolute stored path is not followed (the toolkit's pathlib join would): a dataset
    // must not make the server read files outside its root.
    assert_eq!(local_path(&ds, Domain::Llm, 1, RawFile::Results), None);
    assert_eq!(ds.refused.len(), 1);
    assert_eq!(ds.refused[0].path, "/abs/results.json");
    assert_eq!(local_path(&ds, Domain::Llm, 1, RawFile::Prometheus), None);
}

#[tokio::test]
async fn fractional_ints_and_missing_columns_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let batch = llm_batch([None, None]);
    let mut cols = batch.columns().to_vec();
    let schema = batch.schema();
    let seed = schema.index_of("seed").unwrap();
    cols[seed] = Arc::new(Float64Array::from(vec![Some(1.5), None]));
    write(
        &dir.path().join("runs/llm.parquet"),
        &RecordBatch::try_new(schema.clone(), cols).unwrap(),
    );
    empty_diffusion(dir.path());
    let err = load::load_compiled_dir(dir.path())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("column 'seed' holds the non-integer value 1.5"),
        "{err}"
    );

    let keep: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| schema.field(i).name() != "avg_power_watts")
        .collect();
    write(
        &dir.path().join("runs/llm.parquet"),
        &batch.project(&keep).unwrap(),
    );
    let err = load::load_compiled_dir(dir.path())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("llm.parquet has no column 'avg_power_watts'"),
        "{err}"
    );
}

/// A raw location that must be a local path.
fn local_path(
    ds: &mlenergy_server::service::Snapshot,
    domain: Domain,
    row: usize,
    file: RawFile,
) -> Option<std::path::PathBuf> {
    ds.raw_location(domain, row, file).ok().map(|l| match l {
        mlenergy_server::store::RawLocation::Local { path, .. } => path,
        other => panic!("expected a local path, got {other:?}"),
    })
}
