//! Any bytes read by the peer importers' JSON reader: no panic, no hang; its fast path never reads
//! what serde_json refuses, and what it reads equals what serde_json reads (numbers of the same
//! type); `parse` answers exactly as serde_json does.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mlenergy_server::peer::json::{fast, parse};

fuzz_target!(|data: &[u8]| {
    let reference = serde_json::from_slice::<serde_json::Value>(data).ok();
    if let Some(v) = fast(data) {
        assert_eq!(Some(&v), reference.as_ref(), "the fast reader differs from serde_json");
    }
    assert_eq!(parse(data).ok(), reference, "parse differs from serde_json");
});
