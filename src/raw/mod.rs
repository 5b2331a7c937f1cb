//! Raw benchmark results: the directory grammar of results paths and the inter-token-latency
//! rules, exactly as the reference toolkit applies them (toolkit-behaviour.md §3, §11.2).

pub mod build;
pub mod compile;
pub mod generate;
pub mod path;
