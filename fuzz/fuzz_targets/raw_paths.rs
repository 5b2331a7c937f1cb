//! A path from data (a summary's `results_path`, a raw tree's file): the confinement's normal form
//! never leaves the root (not absolute, no `..`, no empty or `.` component, no NUL), is a fixed
//! point, and the results-path grammar parses or refuses any string without a panic; a path it
//! parses has the parts it was split into.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mlenergy_rawfile::path::parse_results_path;
use mlenergy_rawfile::confine::relative_key;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(key) = relative_key(text) {
        assert!(!key.is_empty() && !key.starts_with('/') && !key.contains('\\') && !key.contains('\0'));
        for part in key.split('/') {
            assert!(!matches!(part, "" | "." | ".."), "{text:?} -> {key:?}");
        }
        assert_eq!(relative_key(&key).ok().as_deref(), Some(key.as_str()), "not a fixed point");
    }
    let _ = parse_results_path(text);
});
