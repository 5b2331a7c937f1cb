//! Property tests of the parsers that take outside bytes (issue 19 item 7): results.json
//! documents of the raw format's shape, generated with every kind of value where a field is
//! expected, read the same by the serde reader, the fast window reader and the reader at offsets,
//! with the values serde_json reads from the same text; any bytes (arbitrary, or a valid document
//! cut or with a byte changed) are an answer or an error on every path, never a panic, and a
//! document the serde reader refuses is never read by a fast path; results paths parse back to
//! the parts they were built from, and any string parses or is refused without a panic. 256 cases
//! each; PROPTEST_CASES=100000 makes a longer hunt.

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
