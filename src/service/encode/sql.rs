//! An SQL answer in the five representations: JSON `{"columns", "count", "rows"}`, CSV and
//! NDJSON rows, Arrow and Parquet with the query's own types.

use datafusion::arrow::ipc::writer::StreamWriter;
use parquet::arrow::ArrowWriter;

use crate::engine::sql::{SqlAnswer, frame_of};
use crate::service::ask::Format;

/// The answer in `format`: JSON `{"columns": [{name, type}], "count", "rows": [...]}`, NDJSON
/// and CSV rows, Arrow and Parquet with the query's own types.
pub fn sql_answer(answer: &SqlAnswer, format: Format) -> Result<Vec<u8>, String> {
    let internal = |e: &dyn std::fmt::Display| e.to_string();
    match format {
        Format::Arrow => {
            let mut out = Vec::new();
            let mut w =
                StreamWriter::try_new(&mut out, &answer.schema).map_err(|e| internal(&e))?;
            for b in &answer.batches {
                w.write(b).map_err(|e| internal(&e))?;
            }
            w.finish().map_err(|e| internal(&e))?;
            drop(w);
            Ok(out)
        }
        Format::Parquet => {
            let mut out = Vec::new();
            let mut w = ArrowWriter::try_new(&mut out, answer.schema.clone(), None)
                .map_err(|e| internal(&e))?;
            for b in &answer.batches {
                w.write(b).map_err(|e| internal(&e))?;
            }
            w.close().map_err(|e| internal(&e))?;
            Ok(out)
        }
        Format::Json => {
            let mut out = Vec::with_capacity(answer.rows * 300 + 128);
            // Rows of no column are no JSON rows (such a query is refused before it runs).
            let rows = if answer.schema.fields().is_empty() {
                0
            } else {
                answer.rows
            };
            json_head(&mut out, answer, rows);
            if rows > 0 {
                json_rows(&mut out, answer).map_err(|e| internal(&e))?;
            } else {
                out.extend_from_slice(b"[]");
            }
            out.push(b'}');
            Ok(out)
        }
        Format::Csv => Ok(super::frames::csv(
            &frame_of(answer).map_err(|e| internal(&e))?,
        )),
        Format::Ndjson => Ok(super::frames::ndjson(
            &frame_of(answer).map_err(|e| internal(&e))?,
        )),
    }
}

/// `{"columns":[...],"count":n,"rows":` of the JSON answer.
fn json_head(out: &mut Vec<u8>, answer: &SqlAnswer, rows: usize) {
    out.extend_from_slice(b"{\"columns\":[");
    for (i, f) in answer.schema.fields().iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"name\":");
        super::json_str(out, f.name());
        out.extend_from_slice(b",\"type\":");
        super::json_str(out, &f.data_type().to_string());
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"count\":");
    out.extend_from_slice(itoa::Buffer::new().format(rows).as_bytes());
    out.extend_from_slice(b",\"rows\":");
}

/// The rows of `answer` as a JSON array of objects, written from its arrays: what `frame_of` and
/// the frame encoder write (strings, integers as 64-bit, floats in shortest form with NaN and
/// infinities null, booleans, any other type as its text), without the frame between them
/// (making it was a large part of a fresh query's encoding).
fn json_rows(
    out: &mut Vec<u8>,
    answer: &SqlAnswer,
) -> Result<(), datafusion::arrow::error::ArrowError> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::compute::cast;
    use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
    let names: Vec<Vec<u8>> = answer
        .schema
        .fields()
        .iter()
        .map(|f| {
            let mut n = Vec::new();
            super::json_str(&mut n, f.name());
            n.push(b':');
            n
        })
        .collect();
    out.push(b'[');
    let mut first = true;
    for batch in &answer.batches {
        let columns = answer
            .schema
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(f, a)| {
                let to = match f.data_type() {
                    d if d.is_integer() => DataType::Int64,
                    d if d.is_floating() => DataType::Float64,
                    DataType::Boolean => DataType::Boolean,
                    _ => return crate::engine::sql::as_text(a),
                };
                cast(a, &to)
            })
            .collect::<Result<Vec<_>, _>>()?;
        for row in 0..batch.num_rows() {
            if !first {
                out.push(b',');
            }
            first = false;
            out.push(b'{');
            for (i, (name, a)) in names.iter().zip(&columns).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(name);
                if a.is_null(row) {
                    out.extend_from_slice(b"null");
                    continue;
                }
                match a.data_type() {
                    DataType::Int64 => out.extend_from_slice(
                        itoa::Buffer::new()
                            .format(a.as_primitive::<Int64Type>().value(row))
                            .as_bytes(),
                    ),
                    DataType::Float64 => {
                        super::json_f64(out, a.as_primitive::<Float64Type>().value(row))
                    }
                    DataType::Boolean => out.extend_from_slice(if a.as_boolean().value(row) {
                        b"true"
                    } else {
                        b"false"
                    }),
                    _ => super::json_str(out, a.as_string::<i32>().value(row)),
                }
            }
            out.push(b'}');
        }
    }
    out.push(b']');
    Ok(())
}
