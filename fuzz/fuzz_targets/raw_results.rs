//! A `results.json` of any bytes, read by the serde reader (the reference), the fast window
//! reader and the reader at offsets, for both domains: no panic, no hang; a document the serde
//! reader refuses is never read by a fast path, and what a fast path reads equals what the serde
//! reader reads.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mlenergy_rawfile::{read_run, read_run_at, read_run_fast};

fuzz_target!(|data: &[u8]| {
    for llm in [true, false] {
        let slow = read_run(data, "fuzz", llm);
        let fast = read_run_fast(data, llm);
        let at = read_run_at(&data, llm);
        match &slow {
            Ok(s) => {
                if let Ok(f) = &fast {
                    assert_eq!(f, s, "the fast reader differs from the serde reader");
                }
                if let Ok(a) = &at {
                    assert_eq!(a, s, "the reader at offsets differs from the serde reader");
                }
            }
            Err(_) => {
                assert!(fast.is_err(), "the fast reader read what the serde reader refuses");
                assert!(at.is_err(), "the reader at offsets read what the serde reader refuses");
            }
        }
    }
});
