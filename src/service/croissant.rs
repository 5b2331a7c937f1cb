//! The dataset's Croissant 1.1 metadata (MLCommons' JSON-LD format, which the Hugging Face Hub,
//! Kaggle and OpenML serve for every dataset): what it is, its license and citation, the revision
//! as its version, the parquet summaries as its distribution (with their SHA-256), and a record
//! set per domain whose fields are the summaries' columns, with the field catalog's type, unit and
//! description.

use bytes::Bytes;
use futures::TryStreamExt;
use serde_json::{Value as Json, json};
use sha2::{Digest, Sha256};

use crate::engine::Domain;
use crate::engine::fields::{FieldSpec, RUN_ID, derived_fields, published_fields};
use crate::service::{ServiceError, Snapshot};

/// The dataset's name, as the hub names it.
const NAME: &str = "ML.ENERGY Benchmark v3";
/// Its license (the hub dataset's card).
const LICENSE: &str = "https://www.apache.org/licenses/LICENSE-2.0";
/// Where it is published.
const URL: &str = "https://huggingface.co/datasets/ml-energy/benchmark-v3";
/// The dataset's major version: `3.0.0+<commit>` names a revision in semantic versioning's form.
const MAJOR: &str = "3.0.0";

/// A run summary as the source stores it (`runs/<domain>.parquet`), or, for a source built from
/// raw files, the run table written as Parquet.
pub struct SummaryFile {
    pub bytes: Bytes,
    pub sha256: String,
}

impl SummaryFile {
    /// The summary of `domain` in `snapshot`.
    pub async fn of(
        service: &crate::service::Service,
        snapshot: &Snapshot,
        domain: Domain,
    ) -> Result<SummaryFile, ServiceError> {
        let path = format!("runs/{}.parquet", domain.as_str());
        let bytes = match service.mirror_file(snapshot, &path).await {
            Ok(file) => {
                let chunks: Vec<Bytes> = file
                    .opened
                    .into_stream()
                    .try_collect()
                    .await
                    .map_err(|e| ServiceError::Internal(format!("{path}: {e}")))?;
                Bytes::from(chunks.concat())
            }
            Err(crate::service::mirror::MirrorError::NotFound(_)) => {
                let frame = &snapshot.table(domain).frame;
                crate::service::encode::encode_frame(
                    frame,
                    crate::service::ask::Format::Parquet,
                    &|_| true,
                    crate::service::encode::json_array,
                )?
                .into()
            }
            Err(e) => return Err(ServiceError::Internal(format!("{path}: {e}"))),
        };
        let sha256 = hex::encode(Sha256::digest(&bytes));
        Ok(SummaryFile { bytes, sha256 })
    }
}

/// The field catalog's entry of `name` in `domain`.
fn spec(domain: Domain, name: &str) -> Option<FieldSpec> {
    std::iter::once(RUN_ID)
        .chain(published_fields(domain).iter().copied())
        .chain(derived_fields(domain).iter().copied())
        .find(|f| f.name == name)
}

/// Croissant's data type of a Parquet column.
fn data_type(ty: &datafusion::arrow::datatypes::DataType) -> &'static str {
    use datafusion::arrow::datatypes::DataType as T;
    match ty {
        T::Boolean => "sc:Boolean",
        T::Int8 | T::Int16 | T::Int32 | T::Int64 | T::UInt8 | T::UInt16 | T::UInt32 | T::UInt64 => {
            "sc:Integer"
        }
        T::Float16 | T::Float32 | T::Float64 => "sc:Float",
        _ => "sc:Text",
    }
}

/// The BibTeX of the dataset at `snapshot`'s revision, accessed on `accessed` (`YYYY-MM-DD`).
pub fn bibtex(snapshot: &Snapshot, accessed: &str) -> String {
    let version = version(snapshot);
    format!(
        "@misc{{mlenergy_benchmark_v3,\n  title = {{{NAME}}},\n  author = {{{{The ML.ENERGY Initiative}}}},\n  howpublished = {{\\url{{{URL}}}}},\n  version = {{{version}}},\n  note = {{Snapshot {}, accessed {accessed}}},\n  year = {{{}}}\n}}",
        snapshot.content_id,
        &snapshot.date()[..4],
    )
}

/// The revision as a semantic version: `3.0.0+<commit or snapshot id>`.
fn version(snapshot: &Snapshot) -> String {
    format!("{MAJOR}+{}", snapshot.pin())
}

/// The Croissant document of `snapshot`, its files served under `base` (this server's origin)
/// as `files` describe them (`(domain, file)`).
pub fn document(
    snapshot: &Snapshot,
    base: &str,
    files: &[(Domain, SummaryFile)],
) -> Result<Json, ServiceError> {
    let pin = snapshot.pin();
    let mut distribution = Vec::new();
    let mut record_sets = Vec::new();
    for (domain, file) in files {
        let d = domain.as_str();
        let file_id = format!("{d}-runs-parquet");
        distribution.push(json!({
            "@type": "cr:FileObject",
            "@id": file_id,
            "name": format!("runs/{d}.parquet"),
            "description": format!("The {d} run summaries: one row per run."),
            "contentUrl": format!("{base}/v1/{d}/summary.parquet?revision={pin}"),
            "contentSize": format!("{} B", file.bytes.len()),
            "encodingFormat": "application/x-parquet",
            "sha256": file.sha256,
        }));
        let schema = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            file.bytes.clone(),
        )
        .map_err(|e| ServiceError::Internal(format!("runs/{d}.parquet: {e}")))?
        .schema()
        .clone();
        let set = format!("{d}_runs");
        let fields: Vec<Json> = schema
            .fields()
            .iter()
            .map(|f| {
                let catalog = spec(*domain, f.name());
                let mut description =
                    catalog.map_or_else(|| f.name().to_string(), |s| s.description.to_string());
                if let Some(unit) = catalog.and_then(|s| s.unit) {
                    description.push_str(&format!(" Unit: {unit}."));
                }
                json!({
                    "@type": "cr:Field",
                    "@id": format!("{set}/{}", f.name()),
                    "name": f.name(),
                    "description": description,
                    "dataType": data_type(f.data_type()),
                    "source": {
                        "fileObject": {"@id": file_id},
                        "extract": {"column": f.name()},
                    },
                })
            })
            .collect();
        let key = schema
            .fields()
            .iter()
            .any(|f| f.name() == "run_id")
            .then(|| json!({"@id": format!("{set}/run_id")}));
        let mut record_set = json!({
            "@type": "cr:RecordSet",
            "@id": set,
            "name": set,
            "description": format!("The measured {d} runs, one record per run."),
            "field": fields,
        });
        if let Some(key) = key {
            record_set["key"] = key;
        }
        record_sets.push(record_set);
    }
    Ok(json!({
        "@context": context(),
        "@type": "sc:Dataset",
        "conformsTo": "http://mlcommons.org/croissant/1.1",
        "name": NAME,
        "description": "Measured GPU energy, throughput and latency of LLM and diffusion model inference runs (H100 and B200, many models, batch sizes and parallelism settings) from the ML.ENERGY benchmark.",
        "license": LICENSE,
        "url": URL,
        "citeAs": bibtex(snapshot, &snapshot.date()),
        "version": version(snapshot),
        "datePublished": snapshot.date(),
        "isLiveDataset": false,
        "distribution": distribution,
        "recordSet": record_sets,
    }))
}

/// Croissant 1.1's JSON-LD context.
fn context() -> Json {
    json!({
        "@language": "en",
        "@vocab": "https://schema.org/",
        "arrayShape": "cr:arrayShape",
        "citeAs": "cr:citeAs",
        "column": "cr:column",
        "conformsTo": "dct:conformsTo",
        "containedIn": "cr:containedIn",
        "cr": "http://mlcommons.org/croissant/",
        "rai": "http://mlcommons.org/croissant/RAI/",
        "data": {"@id": "cr:data", "@type": "@json"},
        "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
        "dct": "http://purl.org/dc/terms/",
        "equivalentProperty": "cr:equivalentProperty",
        "examples": {"@id": "cr:examples", "@type": "@json"},
        "extract": "cr:extract",
        "field": "cr:field",
        "fileProperty": "cr:fileProperty",
        "fileObject": "cr:fileObject",
        "fileSet": "cr:fileSet",
        "format": "cr:format",
        "includes": "cr:includes",
        "isArray": "cr:isArray",
        "isLiveDataset": "cr:isLiveDataset",
        "jsonPath": "cr:jsonPath",
        "key": "cr:key",
        "md5": "cr:md5",
        "parentField": "cr:parentField",
        "path": "cr:path",
        "recordSet": "cr:recordSet",
        "references": "cr:references",
        "regex": "cr:regex",
        "repeated": "cr:repeated",
        "replace": "cr:replace",
        "samplingRate": "cr:samplingRate",
        "sc": "https://schema.org/",
        "separator": "cr:separator",
        "source": "cr:source",
        "subField": "cr:subField",
        "transform": "cr:transform",
    })
}
