//! Property tests of the parsers that take outside bytes (issue 19 item 7): results.json
//! documents of the raw format's shape, generated with every kind of value where a field is
//! expected, read the same by the serde reader, the fast window reader and the reader at offsets,
//! with the values serde_json reads from the same text; any bytes (arbitrary, or a valid document
//! cut or with a byte changed) are an answer or an error on every path, never a panic, and a
//! document the serde reader refuses is never read by a fast path; results paths parse back to
//! the parts they were built from, and any string parses or is refused without a panic. The peer
//! importers' JSON reader reads any document (damaged ones too) as serde_json does. Query
//! strings and JSON bodies go through the router over data/sample: any of them is answered, or
//! refused with a 4xx problem+json naming the parameter, never a 5xx. 256 cases each (192 for the
//! HTTP ones); PROPTEST_CASES=100000 makes a longer hunt. The same parsers have fuzz targets in
//! fuzz/ (bench/fuzz.sh).

use mlenergy_server::peer::json as peer_json;
use mlenergy_server::rawfile::{read_run, read_run_at, read_run_fast};
use mlenergy_server::rawtree::path::{RawDomain, parse_results_path};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A JSON scalar of any kind, with the strings a scanner could trip on.
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        prop_oneof![
            Just("}]{".to_string()),
            Just("\"},\n  {\"success\": true".to_string()),
            Just("\\u007b".to_string()),
            "[a-z\\]\\[{}\",: \\\\]{0,12}",
        ]
        .prop_map(Value::String),
    ]
}

/// A JSON value up to two levels deep.
fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,4}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A JSON scalar the peer reader's fast path reads (no string needs unescaping), or an array
/// of them.
fn plain() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        // (Integers of 19 digits and more go to serde_json.)
        (-(1i64 << 53)..(1i64 << 53)).prop_map(|i| json!(i)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        "[a-z ]{0,6}".prop_map(Value::String),
    ];
    prop_oneof![
        3 => scalar.clone(),
        1 => prop::collection::vec(scalar, 0..3).prop_map(Value::Array),
    ]
}

/// One request record: mostly of the harness's shape, any value where a field is expected, now
/// and then not an object at all.
fn record() -> impl Strategy<Value = Value> {
    let itl = prop_oneof![
        4 => prop::collection::vec(
            prop_oneof![
                6 => (0.0f64..0.5).prop_map(|f| json!(f)),
                1 => Just(json!(0)),
                1 => scalar(),
            ],
            0..8
        )
        .prop_map(Value::Array),
        1 => scalar(),
    ];
    let output_len = prop_oneof![
        6 => (0i64..4096).prop_map(|i| json!(i)),
        1 => scalar(),
    ];
    let success = prop_oneof![4 => any::<bool>().prop_map(Value::Bool), 1 => scalar()];
    let obj = (
        prop::option::of(success),
        prop::option::of(itl),
        prop::option::of(output_len),
        prop::option::of(value()),
    )
        .prop_map(|(s, i, o, extra)| {
            let mut m = serde_json::Map::new();
            if let Some(e) = extra {
                m.insert("prompt".into(), e);
            }
            if let Some(s) = s {
                m.insert("success".into(), s);
            }
            if let Some(i) = i {
                m.insert("itl".into(), i);
            }
            if let Some(o) = o {
                m.insert("output_len".into(), o);
            }
            Value::Object(m)
        });
    prop_oneof![9 => obj, 1 => value()]
}

/// A results.json document, written compact or indented.
fn document() -> impl Strategy<Value = (Value, Vec<u8>)> {
    let timeline = prop_oneof![
        Just(None),
        prop::collection::vec((0.0f64..100.0, 0.0f64..700.0), 0..6).prop_map(|points| {
            let series: Vec<Value> = points.iter().map(|(t, v)| json!([t, v])).collect();
            Some(json!({"power": {"device_instant": {"0": series}}}))
        }),
    ];
    (
        prop::collection::vec(record(), 0..12),
        timeline,
        prop::option::of(value()),
        any::<bool>(),
    )
        .prop_map(|(results, timeline, extra, pretty)| {
            let mut m = serde_json::Map::new();
            if let Some(e) = extra {
                m.insert("model_id".into(), e);
            }
            m.insert("results".into(), Value::Array(results));
            if let Some(t) = timeline {
                m.insert("timeline".into(), t);
            }
            let doc = Value::Object(m);
            let bytes = if pretty {
                serde_json::to_vec_pretty(&doc).unwrap()
            } else {
                serde_json::to_vec(&doc).unwrap()
            };
            (doc, bytes)
        })
}

proptest! {

    /// A valid document reads the same on every path, with what serde_json reads from it.
    #[test]
    fn every_reader_reads_a_document_alike((doc, bytes) in document()) {
        let slow = read_run(bytes.as_slice(), "prop", true).expect("a valid document");
        if let Ok(fast) = read_run_fast(bytes.as_slice(), true) {
            prop_assert_eq!(&fast, &slow);
        }
        if let Ok(at) = read_run_at(&bytes.as_slice(), true) {
            prop_assert_eq!(&at, &slow);
        }
        let records = doc["results"].as_array().unwrap();
        prop_assert_eq!(slow.success.len(), records.len());
        for (i, r) in records.iter().enumerate() {
            if !r.is_object() {
                prop_assert!(slow.non_object);
                continue;
            }
            // bool(req.get("success", False)) where it is a JSON boolean or absent.
            match r.get("success") {
                None => prop_assert!(!slow.success[i]),
                Some(Value::Bool(b)) => prop_assert_eq!(slow.success[i], *b),
                _ => {}
            }
            // int(output_len) where it is an integer; None where null or absent.
            match r.get("output_len") {
                None | Some(Value::Null) => prop_assert_eq!(slow.output_len[i], None),
                Some(v) if v.is_i64() => prop_assert_eq!(slow.output_len[i], v.as_i64()),
                _ => {}
            }
        }
        // The diffusion reading (timeline only) agrees too.
        let slow = read_run(bytes.as_slice(), "prop", false).unwrap();
        if let Ok(fast) = read_run_fast(bytes.as_slice(), false) {
            prop_assert_eq!(fast, slow);
        }
    }

    /// A valid document cut short or with one byte changed: every path answers or refuses, none
    /// panics, and no fast path reads what the serde reader refuses.
    #[test]
    fn a_damaged_document_is_refused_alike(
        (_, bytes) in document(),
        cut in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = bytes;
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        } else {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        let slow = read_run(bytes.as_slice(), "prop", true);
        let fast = read_run_fast(bytes.as_slice(), true);
        let at = read_run_at(&bytes.as_slice(), true);
        match &slow {
            Ok(s) => {
                if let Ok(f) = &fast {
                    prop_assert_eq!(f, s);
                }
                if let Ok(a) = &at {
                    prop_assert_eq!(a, s);
                }
            }
            Err(_) => {
                prop_assert!(fast.is_err(), "the fast reader read what the serde reader refuses");
                prop_assert!(at.is_err(), "the reader at offsets read what the serde reader refuses");
            }
        }
    }

    /// Any bytes at all: an answer or an error, on every path.
    #[test]
    fn any_bytes_are_answered_or_refused(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let slow = read_run(bytes.as_slice(), "prop", true);
        let fast = read_run_fast(bytes.as_slice(), true);
        let at = read_run_at(&bytes.as_slice(), true);
        if slow.is_err() {
            prop_assert!(fast.is_err() && at.is_err());
        }
    }

    /// The peer importers' JSON reader: a document of any values, pretty or compact, with
    /// number texts spliced in (valid or nearly: signs, leading zeros, fractions, exponents,
    /// digit counts around the 64-bit limits), whole, cut short or with one byte changed, reads
    /// as serde_json reads it (the same value, numbers of the same type) or is refused as
    /// serde_json refuses it; its fast path never reads what serde_json refuses; read, it writes
    /// back as serde_json writes its own reading.
    #[test]
    fn peer_json_reads_as_serde_reads(
        v in value(),
        numbers in prop::collection::vec("-?[0-9]{0,22}(\\.[0-9]{0,20})?([eE][+-]?[0-9]{0,4})?", 0..6),
        pretty in any::<bool>(),
        damage in 0..3u8,
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let text = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) };
        let mut bytes = format!("{{\"v\": {}, \"n\": [{}]}}", text.unwrap(), numbers.join(", ")).into_bytes();
        match damage {
            1 => bytes.truncate(at.index(bytes.len())),
            2 => {
                let i = at.index(bytes.len());
                bytes[i] = byte;
            }
            _ => {}
        }
        let reference = serde_json::from_slice::<Value>(&bytes).ok();
        if let Some(fast) = peer_json::fast(&bytes) {
            prop_assert_eq!(Some(fast.to_value()), reference.clone());
        }
        let ours = peer_json::parse(&bytes).ok();
        prop_assert_eq!(ours.as_ref().map(|n| n.to_value()), reference.clone());
        if let (Some(n), Some(r)) = (&ours, &reference) {
            // Written back (as an IPW evaluation's metadata is), what serde_json writes.
            prop_assert_eq!(serde_json::to_string(n).unwrap(), r.to_string());
        }
    }

    /// Objects whose keys repeat (small alphabets, nested; up to 40 members, past the size below
    /// which an object is scanned): the peer reader's document reads each key as serde_json's
    /// map does (the first place, the last value), member by member and written back.
    #[test]
    fn peer_json_reads_repeated_keys_as_serde_reads(
        members in prop::collection::vec(("[a-c]{1,2}", plain(), prop::collection::vec(("[ab]", plain()), 0..4)), 0..40),
    ) {
        let object = |pairs: Vec<(String, String)>| {
            let body: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k:?}: {v}")).collect();
            format!("{{{}}}", body.join(", "))
        };
        let text = object(
            members
                .into_iter()
                .map(|(k, v, inner)| {
                    let inner = object(inner.into_iter().map(|(k, v)| (k, v.to_string())).collect());
                    (k, format!("[{v}, {inner}]"))
                })
                .collect(),
        );
        let reference: Value = serde_json::from_str(&text).unwrap();
        let node = peer_json::fast(text.as_bytes()).expect("no escapes: the fast path reads it");
        prop_assert_eq!(node.to_value(), reference.clone());
        prop_assert_eq!(serde_json::to_string(&node).unwrap(), reference.to_string());
        for key in ["a", "b", "c", "ab", "ca", "d"] {
            prop_assert_eq!(node.get(key).map(|n| n.to_value()), reference.get(key).cloned());
        }
        let keys: Vec<&str> = node.entries().map(|(k, _)| k).collect();
        let expected: Vec<&str> = reference.as_object().unwrap().keys().map(String::as_str).collect();
        prop_assert_eq!(keys, expected);
    }

    /// A results path built from parts parses back to them; the same with the run directory's
    /// pairs for each domain.
    #[test]
    fn results_paths_parse_back_to_their_parts(
        gpu in "[a-z][a-z0-9]{1,5}",
        task in "[a-z][a-z-]{0,12}",
        org in "[A-Za-z0-9][A-Za-z0-9._-]{0,10}",
        model in "[A-Za-z0-9][A-Za-z0-9._-]{0,14}",
        sku in "[A-Z][A-Z0-9]{1,5}",
        gpus in 1u32..9,
        seqs in 1u32..4097,
    ) {
        let cfg = format!("num_gpus+{gpus}+max_num_seqs+{seqs}+seed+48105");
        let rel = format!("llm/{gpu}/current/run/llm/{task}/results/{org}/{model}/{sku}/{cfg}/results.json");
        let p = parse_results_path(&rel).unwrap();
        prop_assert_eq!(p.domain, RawDomain::Llm);
        prop_assert_eq!(&p.workload, &task);
        prop_assert_eq!(p.model_id(), format!("{org}/{model}"));
        prop_assert_eq!(p.gpu_sku.as_deref(), Some(sku.as_str()));
        prop_assert_eq!(p.config_int("num_gpus"), Some(i64::from(gpus)));
        prop_assert_eq!(p.config_int("max_num_seqs"), Some(i64::from(seqs)));
        let cfg = format!("batch-{gpus}+size-1024x1024+steps-{seqs}+seed-48105");
        let rel = format!("diffusion/{gpu}/current/run/diffusion/{task}/{org}/{model}/{cfg}/results.json");
        let p = parse_results_path(&rel).unwrap();
        prop_assert_eq!(p.domain, RawDomain::Diffusion);
        prop_assert_eq!(p.model_id(), format!("{org}/{model}"));
        prop_assert_eq!(p.config_int("batch"), Some(i64::from(gpus)));
        prop_assert_eq!(p.config_int("steps"), Some(i64::from(seqs)));
    }

    /// Any string: parsed or refused, never a panic.
    #[test]
    fn any_path_is_parsed_or_refused(rel in "[a-z/+\\-0-9.]{0,80}|(llm|diffusion)(/[^/]{0,6}){0,14}") {
        let _ = parse_results_path(&rel);
    }
}

/// The router over data/sample and the runtime that drives it, built once for the HTTP
/// properties (proptest's cases are synchronous).
fn http_app() -> &'static (tokio::runtime::Runtime, crate::common::TestApp) {
    static APP: std::sync::OnceLock<(tokio::runtime::Runtime, crate::common::TestApp)> =
        std::sync::OnceLock::new();
    APP.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let app = rt.block_on(crate::common::TestApp::sample());
        (rt, app)
    })
}

/// An answer to bad input is a 4xx problem+json whose `parameter` names what was wrong (a
/// query parameter, or the body), never a 5xx.
fn answered_or_refused(
    method: &str,
    uri: &str,
    content_type: &str,
    body: &str,
) -> Result<(), TestCaseError> {
    let (rt, app) = http_app();
    let r = rt.block_on(app.send(
        method,
        uri,
        &[("content-type", content_type)],
        axum::body::Body::from(body.to_string()),
    ));
    prop_assert!(
        !r.status.is_server_error(),
        "{method} {uri} {body}: {} {}",
        r.status,
        r.text()
    );
    if r.status.is_client_error() {
        prop_assert_eq!(
            r.content_type(),
            "application/problem+json",
            "{} {}",
            uri,
            r.text()
        );
        let p = r.json();
        if r.status == 400 {
            prop_assert!(
                p["parameter"].is_string(),
                "{method} {uri} {body}: no parameter in {p}"
            );
        }
    }
    Ok(())
}

/// `v` as a request target carries it: characters a URI cannot hold percent-encoded, `%` left
/// as it is (malformed escapes are part of the input), `&` and `#` encoded so the value stays one.
fn target_safe(v: &str) -> String {
    let mut out = String::new();
    for c in v.chars() {
        if c.is_ascii_alphanumeric() || "-._~%,=():*$!'+;/?@[]".contains(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// A query parameter: mostly one the endpoints take, with values of every kind (numbers out of
/// range, lists, ranges, empty, escapes), now and then any name.
fn query_pair() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        8 => prop::sample::select(vec![
            "task", "model", "model_id", "gpu", "gpu_model", "nickname", "precision", "num_gpus",
            "num_gpus_min", "num_gpus_max", "batch", "batch_min", "batch_max", "max_num_seqs",
            "batch_size", "stability", "sort", "limit", "offset", "fields", "format", "by", "agg",
            "latency", "energy", "deadline", "budget", "per", "summary", "metric", "per_gpu",
            "every", "include_unsuccessful", "max_samples", "seed", "q", "y", "x",
        ]).prop_map(String::from),
        1 => "[a-z_]{1,8}",
    ];
    let value = prop_oneof![
        Just(String::new()),
        (-5i64..5000).prop_map(|i| i.to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
        Just("18446744073709551616".to_string()),
        Just("9007199254740993".to_string()),
        prop::sample::select(vec![
            "gpqa",
            "B200",
            "H100",
            "json",
            "csv",
            "parquet",
            "arrow",
            "ndjson",
            "xml",
            "all",
            "stable",
            "unstable",
            "true",
            "false",
            "1s",
            "-energy_per_token_joules",
            "task,gpu_model",
            "mean(energy_per_token_joules)",
            "argmin",
            "median_itl",
            "power.device_instant",
            "temperature",
            "SELECT 1",
            "%zz",
            "%00",
            "a,,b",
            ",",
            "NaN",
            "inf",
            "-0",
            "1e309",
        ])
        .prop_map(String::from),
        "[ -~]{0,12}",
    ];
    (name, value).prop_map(|(n, v)| format!("{n}={}", target_safe(&v)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    /// Any query string on the GET endpoints that take one: an answer, or a 4xx problem+json
    /// naming the parameter; never a 5xx.
    #[test]
    fn any_query_string_is_answered_or_refused(
        path in prop::sample::select(vec![
            "/v1/llm/runs", "/v1/diffusion/runs", "/v1/llm/groups", "/v1/diffusion/groups",
            "/v1/llm/best", "/v1/diffusion/best", "/v1/llm/pareto", "/v1/diffusion/pareto",
            "/v1/llm/fits/logistic", "/v1/diffusion/fits/logistic", "/v1/llm/itl",
            "/v1/llm/output-lengths", "/v1/llm/timelines", "/v1/diffusion/timelines",
            "/v1/llm/fits/itl-mixture", "/v1/llm/charts/pareto.svg", "/v1/diffusion/charts/sweep.svg",
            "/v1/sql", "/v1/llm/fields",
        ]),
        pairs in prop::collection::vec(query_pair(), 0..5),
    ) {
        answered_or_refused("GET", &format!("{path}?{}", pairs.join("&")), "text/plain", "")?;
    }

    /// Any JSON on the endpoints that read a body: values of every kind where the bodies'
    /// fields are expected, arrays of any length and content. An answer, or a 4xx problem+json
    /// naming what was wrong; never a 5xx.
    #[test]
    fn any_json_body_is_answered_or_refused(
        path in prop::sample::select(vec![
            "/v1/models/logistic/fit", "/v1/models/logistic/eval",
            "/v1/models/itl-mixture/fit", "/v1/models/itl-mixture/sample", "/v1/sql",
        ]),
        fields in prop::collection::btree_map(
            prop::sample::select(vec![
                "x", "batch", "y", "params", "samples", "replicas", "seed", "n", "sql",
                "max_samples", "model", "weights", "means", "sigmas", "unknown",
            ]),
            prop_oneof![
                3 => prop::collection::vec(
                    prop_oneof![(-1e3f64..1e3).prop_map(|f| json!(f)), Just(json!(0)), scalar()],
                    0..12,
                ).prop_map(Value::Array),
                2 => value(),
                1 => Just(json!({"x0": 1.0, "k": 2.0, "L": 3.0, "b0": 0.5})),
                1 => Just(json!("SELECT count(*) FROM llm_runs WHERE num_gpus > $1")),
                1 => (-3i64..100000).prop_map(|i| json!(i)),
            ],
            0..4,
        ),
        raw in prop::option::weighted(0.1, "[ -~]{0,24}"),
    ) {
        let body = raw.unwrap_or_else(|| Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect()).to_string());
        answered_or_refused("POST", path, "application/json", &body)?;
    }
}
