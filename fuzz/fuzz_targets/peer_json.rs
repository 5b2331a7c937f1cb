//! Any bytes read by the peer importers' JSON reader: no panic, no hang; its fast path never reads
//! what serde_json refuses, and what it reads equals what serde_json reads (numbers of the same
//! type, a repeated key's first place and last value); `parse` answers exactly as serde_json does,
//! and writes back what serde_json writes of its own reading.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mlenergy_peer::json::{fast, parse};

fuzz_target!(|data: &[u8]| {
    let reference = serde_json::from_slice::<serde_json::Value>(data).ok();
    if let Some(v) = fast(data) {
        assert_eq!(Some(&v.to_value()), reference.as_ref(), "the fast reader differs from serde_json");
    }
    let ours = parse(data).ok();
    assert_eq!(ours.as_ref().map(|n| n.to_value()), reference, "parse differs from serde_json");
    if let (Some(n), Some(r)) = (&ours, &reference) {
        assert_eq!(serde_json::to_string(n).unwrap(), r.to_string(), "written back differently");
    }
});
