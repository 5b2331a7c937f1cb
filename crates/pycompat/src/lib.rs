//! Leaf utilities that reproduce Python and numpy to the last bit: numpy's float64 reductions,
//! percentiles and histograms ([`numpy`]), CPython's `repr(float)` ([`repr`]), Python's
//! conversions of JSON values (`float()`, `int()`, truthiness: [`value`]), and JSON written as
//! `json.dump(indent=2, sort_keys=True)` writes it ([`json`]).
//!
//! Crate `mlenergy-pycompat`: depends on nothing of the workspace (serde_json and ryu only);
//! every other crate may use it.

pub mod json;
pub mod numpy;
pub mod repr;
pub mod value;
