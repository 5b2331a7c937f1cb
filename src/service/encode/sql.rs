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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{
        ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
        Int8Array, Int32Array, LargeStringArray, RecordBatch, StringArray, StringViewArray,
        UInt64Array,
    };
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    /// JSON written from the arrays is what the frame encoder writes of the same answer, byte for
    /// byte: every kind of column, nulls, escapes, NaN and infinities, integers that do not fit in
    /// 64 bits, other types as text, and rows in two batches.
    #[test]
    fn json_from_arrays_is_the_frames_json() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("s", DataType::Utf8, true),
            Field::new("ls", DataType::LargeUtf8, true),
            Field::new("vs", DataType::Utf8View, true),
            Field::new("i8", DataType::Int8, true),
            Field::new("u64", DataType::UInt64, true),
            Field::new("i32", DataType::Int32, true),
            Field::new("f32", DataType::Float32, true),
            Field::new("f64", DataType::Float64, true),
            Field::new("b", DataType::Boolean, true),
            Field::new("d", DataType::Date32, true),
            Field::new("dec", DataType::Decimal128(10, 3), true),
            Field::new("na\"me", DataType::Int32, true),
        ]));
        let batch = |k: i64| {
            let columns: Vec<ArrayRef> = vec![
                Arc::new(StringArray::from(vec![
                    Some("a\"b\\c\nd"),
                    None,
                    Some("\u{e9}t\u{e9} \u{1f600}"),
                    Some(""),
                ])),
                Arc::new(LargeStringArray::from(vec![
                    Some("x"),
                    Some("\t"),
                    None,
                    Some("z"),
                ])),
                Arc::new(StringViewArray::from(vec![
                    Some("a string longer than twelve bytes"),
                    Some("short"),
                    None,
                    Some("\u{7f}\u{1}"),
                ])),
                Arc::new(Int8Array::from(vec![Some(-128), Some(127), None, Some(0)])),
                Arc::new(UInt64Array::from(vec![
                    Some(u64::MAX),
                    Some(i64::MAX as u64),
                    None,
                    Some(7),
                ])),
                Arc::new(Int32Array::from(vec![
                    None,
                    Some(i32::MIN),
                    Some(k as i32),
                    Some(1),
                ])),
                Arc::new(Float32Array::from(vec![
                    Some(f32::NAN),
                    Some(0.1),
                    Some(f32::INFINITY),
                    None,
                ])),
                Arc::new(Float64Array::from(vec![
                    Some(f64::NEG_INFINITY),
                    Some(-0.0),
                    Some(1e300 * k as f64),
                    Some(0.1 + 0.2),
                ])),
                Arc::new(BooleanArray::from(vec![
                    Some(true),
                    None,
                    Some(false),
                    Some(true),
                ])),
                Arc::new(Date32Array::from(vec![
                    Some(0),
                    Some(19_000),
                    None,
                    Some(-1),
                ])),
                Arc::new(
                    Decimal128Array::from(vec![Some(12_345), None, Some(-1), Some(k as i128)])
                        .with_precision_and_scale(10, 3)
                        .unwrap(),
                ),
                Arc::new(Int32Array::from(vec![Some(1), Some(2), Some(3), None])),
            ];
            RecordBatch::try_new(schema.clone(), columns).unwrap()
        };
        let answer = SqlAnswer {
            schema: schema.clone(),
            batches: vec![batch(1), batch(-3)],
            rows: 8,
        };
        let frame = frame_of(&answer).unwrap();
        let mut by_frame = Vec::new();
        json_head(&mut by_frame, &answer, frame.num_rows());
        super::super::json_array(&mut by_frame, &frame);
        by_frame.push(b'}');
        let ours = sql_answer(&answer, Format::Json).unwrap();
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            String::from_utf8(by_frame).unwrap()
        );
        // And it is JSON, with the rows' values.
        let v: serde_json::Value =
            serde_json::from_slice(&sql_answer(&answer, Format::Json).unwrap()).unwrap();
        assert_eq!(v["count"], 8);
        assert_eq!(v["rows"][0]["s"], "a\"b\\c\nd");
        assert_eq!(v["rows"][0]["u64"], serde_json::Value::Null);
        assert_eq!(v["rows"][1]["u64"], i64::MAX);
        assert_eq!(v["rows"][0]["f32"], serde_json::Value::Null);
        assert_eq!(v["rows"][7]["f64"], 0.30000000000000004);
        assert_eq!(v["rows"][1]["d"], "2022-01-08");
        assert_eq!(v["rows"][0]["dec"], "12.345");
    }
}
