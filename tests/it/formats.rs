//! CSV, NDJSON, Arrow IPC and Parquet answers parse and carry the same values as JSON.

use std::sync::Arc;

use crate::common::TestApp;
use bytes::Bytes;
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::arrow::ipc::reader::StreamReader;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Map, Value};

/// Value of an Arrow cell as JSON (structs nest).
fn cell(a: &dyn Array, i: usize) -> Value {
    if a.is_null(i) {
        return Value::Null;
    }
    match a.data_type() {
        DataType::Utf8 => Value::from(a.as_string::<i32>().value(i)),
        DataType::Int64 => Value::from(a.as_primitive::<Int64Type>().value(i)),
        DataType::Float64 => Value::from(a.as_primitive::<Float64Type>().value(i)),
        DataType::Boolean => Value::from(a.as_boolean().value(i)),
        DataType::Struct(fields) => {
            let s = a.as_struct();
            Value::Object(
                fields
                    .iter()
                    .enumerate()
                    .map(|(k, f)| (f.name().clone(), cell(s.column(k).as_ref(), i)))
                    .collect(),
            )
        }
        other => panic!("unexpected Arrow type {other}"),
    }
}

fn batches_to_rows(batches: &[RecordBatch]) -> Vec<Value> {
    let mut rows = Vec::new();
    for b in batches {
        for i in 0..b.num_rows() {
            let obj: Map<String, Value> = b
                .schema()
                .fields()
                .iter()
                .enumerate()
                .map(|(k, f)| (f.name().clone(), cell(b.column(k).as_ref(), i)))
                .collect();
            rows.push(Value::Object(obj));
        }
    }
    rows
}

fn arrow_rows(body: &[u8]) -> Vec<Value> {
    let reader =
        StreamReader::try_new(std::io::Cursor::new(body.to_vec()), None).expect("Arrow IPC stream");
    batches_to_rows(&reader.collect::<Result<Vec<_>, _>>().unwrap())
}

fn parquet_rows(body: &[u8]) -> Vec<Value> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(body.to_vec()))
        .unwrap()
        .build()
        .unwrap();
    batches_to_rows(&reader.collect::<Result<Vec<_>, _>>().unwrap())
}

fn ndjson_rows(body: &str) -> Vec<Value> {
    body.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// CSV rows typed like their (flattened) JSON twins.
fn csv_rows(body: &str, like: &[Value]) -> Vec<Value> {
    let mut rdr = csv::Reader::from_reader(body.as_bytes());
    let headers: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    let lookup =
        |row: &Value, name: &str| -> Value { row.get(name).cloned().unwrap_or(Value::Null) };
    rdr.records()
        .enumerate()
        .map(|(r, rec)| {
            let rec = rec.unwrap();
            let mut obj = Map::new();
            for (h, cellv) in headers.iter().zip(rec.iter()) {
                // Type each cell from the JSON twin: the same value must come back.
                let want = lookup(&like[r], h);
                let got = if cellv.is_empty() {
                    if want.is_string() {
                        Value::from("")
                    } else {
                        Value::Null
                    }
                } else {
                    match want {
                        Value::Bool(_) => Value::from(cellv == "true"),
                        Value::Number(ref n) if n.is_i64() => {
                            Value::from(cellv.parse::<i64>().unwrap())
                        }
                        Value::Number(_) => Value::from(cellv.parse::<f64>().unwrap()),
                        _ => Value::from(cellv),
                    }
                };
                obj.insert(h.clone(), got);
            }
            Value::Object(obj)
        })
        .collect()
}

/// Flatten nested objects to dotted keys (the CSV shape).
fn flatten(v: &Value) -> Value {
    fn walk(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let name = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    match x {
                        Value::Object(_) => walk(&name, x, out),
                        _ => {
                            out.insert(name, x.clone());
                        }
                    }
                }
            }
            _ => unreachable!(),
        }
    }
    let mut out = Map::new();
    walk("", v, &mut out);
    Value::Object(out)
}

/// Row-by-row equality with a short message naming the first difference.
fn same_rows(got: &[Value], want: &[Value], format: &str, url: &str) {
    assert_eq!(got.len(), want.len(), "{format} row count for {url}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{format} row {i} of {url}");
    }
}

async fn check_all_formats(app: &TestApp, url: &str, json_rows: Vec<Value>) {
    let sep = if url.contains('?') { '&' } else { '?' };
    let get = |f: &'static str| {
        let u = format!("{url}{sep}format={f}");
        async move { app.get(&u).await }
    };
    let csv = get("csv").await;
    assert_eq!(csv.content_type(), "text/csv; charset=utf-8");
    let nd = get("ndjson").await;
    assert_eq!(nd.content_type(), "application/x-ndjson");
    let arrow = get("arrow").await;
    assert_eq!(arrow.content_type(), "application/vnd.apache.arrow.stream");
    let pq = get("parquet").await;
    assert_eq!(pq.content_type(), "application/vnd.apache.parquet");

    same_rows(&ndjson_rows(&nd.text()), &json_rows, "ndjson", url);
    same_rows(&arrow_rows(&arrow.body), &json_rows, "arrow", url);
    same_rows(&parquet_rows(&pq.body), &json_rows, "parquet", url);
    let flat: Vec<Value> = json_rows.iter().map(flatten).collect();
    same_rows(&csv_rows(&csv.text(), &flat), &flat, "csv", url);
    // The same answers through Accept.
    let by_accept = app
        .get_with(url, &[("accept", "application/vnd.apache.parquet")])
        .await;
    assert_eq!(by_accept.body, pq.body);
}

#[tokio::test]
async fn run_lists_agree_across_formats() {
    let app = TestApp::sample().await;
    for url in [
        "/v1/llm/runs",
        "/v1/diffusion/runs",
        "/v1/llm/runs?task=video-chat&sort=-avg_power_watts&limit=7&fields=avg_power_watts,seed,is_stable",
        "/v1/llm/runs?task=none",
    ] {
        let json = app.get(url).await.json();
        let rows = json["runs"].as_array().unwrap().clone();
        check_all_formats(&app, url, rows).await;
    }
}

#[tokio::test]
async fn groups_agree_across_formats() {
    let app = TestApp::sample().await;
    for url in [
        "/v1/llm/groups?by=task,gpu_model&agg=mean(energy_per_token_joules),argmin(energy_per_token_joules),max(max_num_seqs),mean(mean_itl_ms)",
        "/v1/diffusion/groups?by=model_id&agg=argmax(throughput_generations_per_sec),median(batch_latency_s)",
    ] {
        let json = app.get(url).await.json();
        let rows: Vec<Value> = json["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                let mut g = g.as_object().unwrap().clone();
                g.remove("key");
                Value::Object(g)
            })
            .collect();
        check_all_formats(&app, url, rows).await;
    }
}

#[tokio::test]
async fn one_run_in_every_format() {
    let app = TestApp::sample().await;
    let url = "/v1/diffusion/runs/text-to-video~Wan-AI--Wan2.1-T2V-14B-Diffusers~H100~g8~b1~480x832~s50~u8~r1";
    let one = app.get(url).await;
    assert_eq!(one.status, 200, "{}", one.text());
    check_all_formats(&app, url, vec![one.json()]).await;
}

#[tokio::test]
async fn floats_are_shortest_round_trip() {
    let app = TestApp::sample().await;
    let csv = app
        .get("/v1/llm/runs?fields=p99_itl_ms&limit=1&format=csv")
        .await
        .text();
    assert_eq!(
        csv,
        "run_id,p99_itl_ms\ngpqa~Qwen--Qwen3-14B~B200~g1~b8~r1,68.6399259546306\n"
    );
    let json = app
        .get("/v1/llm/runs?fields=total_output_tokens&limit=1")
        .await
        .text();
    assert!(json.contains("\"total_output_tokens\":1391196.0"), "{json}");
    let _ = Arc::new(());
}

/// Long answers streamed while they are encoded (`--stream-answer-bytes 0`) are the bytes of the
/// cached ones, in every format, with the same row count header. (Arrow answers are sent from the
/// derived buffers either way; `long`'s unit test checks them against arrow's `StreamWriter`.)
#[tokio::test]
async fn streamed_long_answers_equal_cached_ones() {
    let cached = TestApp::sample().await;
    let streamed = TestApp::with_limits(mlenergy_server::http::Limits {
        max_rows: 100_000,
        stream_bytes: 0,
    })
    .await;
    let runs = cached
        .get("/v1/llm/runs?fields=run_id,results_path&stability=all")
        .await
        .json();
    let ids: Vec<&str> = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["results_path"].is_string())
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert!(!ids.is_empty());
    for id in ids {
        for what in ["itl", "output-lengths?include_unsuccessful=true"] {
            for format in ["json", "csv", "ndjson", "arrow", "parquet"] {
                let sep = if what.contains('?') { '&' } else { '?' };
                let uri = format!("/v1/llm/runs/{id}/{what}{sep}format={format}");
                let (a, b) = (cached.get(&uri).await, streamed.get(&uri).await);
                assert_eq!(a.status, 200, "{uri}: {}", a.text());
                assert_eq!(b.status, 200, "{uri}: {}", b.text());
                assert!(!a.body.is_empty());
                assert!(a.body == b.body, "{uri}");
                assert_eq!(a.headers["x-total-count"], b.headers["x-total-count"]);
                assert_eq!(a.content_type(), b.content_type());
            }
        }
    }
}
