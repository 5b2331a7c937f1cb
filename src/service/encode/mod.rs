//! Turning answers into bytes in the five representations (JSON, CSV, NDJSON, Arrow IPC stream,
//! Parquet): run and group frames ([`frames`]), and the long answers with one row per sample or
//! request ([`per_sample`]: ITLs, output lengths, which may be sent in pieces or streamed), and SQL answers ([`sql`]).

pub mod frames;
pub mod per_sample;
pub mod sql;
pub mod table_json;

pub use frames::{
    encode_frame, encode_owned_frame, json_array, json_cell_of, json_f64, json_members,
    json_object, json_str, json_warnings,
};
pub use table_json::{TableJson, TableJsonCache};
