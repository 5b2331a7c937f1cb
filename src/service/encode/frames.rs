//! Encoders from `Frame` to each representation. Floats are written in shortest round-trip form
//! (ryu); non-finite floats and nulls are JSON `null` and empty CSV cells. Struct columns nest in
//! JSON/NDJSON/Arrow/Parquet and flatten to `parent.child` columns in CSV.

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::ipc::writer::StreamEncoder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::engine::EngineError;
use crate::engine::arrow_conv::frame_to_batch;
use crate::engine::frame::{ColumnData, Frame, FrameColumn, Value};
use crate::service::ask::Format;

/// Append a JSON string literal.
pub fn json_str(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *out, s).expect("writing to a Vec cannot fail");
}

/// Append a float in shortest round-trip form; null when not finite.
pub fn json_f64(out: &mut Vec<u8>, x: f64) {
    if x.is_finite() {
        out.extend_from_slice(ryu::Buffer::new().format_finite(x).as_bytes());
    } else {
        out.extend_from_slice(b"null");
    }
}

fn json_value(out: &mut Vec<u8>, v: Value<'_>) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Str(s) => json_str(out, s),
        Value::Int(i) => out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes()),
        Value::Float(x) => json_f64(out, x),
        Value::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
    }
}

fn json_cell(out: &mut Vec<u8>, col: &FrameColumn, row: usize) {
    match &col.data {
        ColumnData::Struct { fields, valid } => {
            if valid[row] {
                out.push(b'{');
                write_members(out, fields, row);
                out.push(b'}');
            } else {
                out.extend_from_slice(b"null");
            }
        }
        // JSON text, written as the value it is.
        ColumnData::Json(v) => match &v[row] {
            Some(text) => out.extend_from_slice(text.as_bytes()),
            None => out.extend_from_slice(b"null"),
        },
        data => json_value(out, data.get(row)),
    }
}

fn write_members(out: &mut Vec<u8>, cols: &[FrameColumn], row: usize) {
    for (i, c) in cols.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        json_str(out, &c.name);
        out.push(b':');
        json_cell(out, c, row);
    }
}

/// `"a":1,"b":"x"` for one row (no braces), so callers can add members of their own.
pub fn json_members(out: &mut Vec<u8>, frame: &Frame, row: usize) {
    write_members(out, &frame.columns, row);
}

/// `,"warnings":[...]` when there are any (a member of an answer's envelope).
pub fn json_warnings(out: &mut Vec<u8>, warnings: &[String]) {
    if warnings.is_empty() {
        return;
    }
    out.extend_from_slice(b",\"warnings\":[");
    for (i, w) in warnings.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        json_str(out, w);
    }
    out.push(b']');
}

/// One row as a JSON object.
pub fn json_object(out: &mut Vec<u8>, frame: &Frame, row: usize) {
    out.push(b'{');
    json_members(out, frame, row);
    out.push(b'}');
}

/// All rows as a JSON array of objects.
pub fn json_array(out: &mut Vec<u8>, frame: &Frame) {
    out.push(b'[');
    for r in 0..frame.num_rows() {
        if r > 0 {
            out.push(b',');
        }
        json_object(out, frame, r);
    }
    out.push(b']');
}

/// A JSON value of a single cell (used for group keys).
pub fn json_cell_of(out: &mut Vec<u8>, col: &FrameColumn, row: usize) {
    json_cell(out, col, row);
}

/// Newline-delimited JSON: one object per row.
pub fn ndjson(frame: &Frame) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.num_rows() * 512);
    for r in 0..frame.num_rows() {
        json_object(&mut out, frame, r);
        out.push(b'\n');
    }
    out
}

/// Leaf columns for CSV, with dotted names for struct children.
fn flatten<'a>(
    cols: &'a [FrameColumn],
    prefix: &str,
    parent_valid: Option<&'a [bool]>,
    out: &mut Vec<(String, &'a ColumnData, Option<&'a [bool]>)>,
) {
    for c in cols {
        let name = if prefix.is_empty() {
            c.name.clone()
        } else {
            format!("{prefix}.{}", c.name)
        };
        match &c.data {
            ColumnData::Struct { fields, valid } => flatten(fields, &name, Some(valid), out),
            data => out.push((name, data, parent_valid)),
        }
    }
}

/// RFC 4180 CSV with a header row; null cells are empty, booleans `true`/`false`.
pub fn csv(frame: &Frame) -> Vec<u8> {
    let mut leaves = Vec::new();
    flatten(&frame.columns, "", None, &mut leaves);
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing into a Vec cannot fail, hence the expects below.
    w.write_record(leaves.iter().map(|(n, _, _)| n.as_bytes()))
        .expect("csv header");
    let mut ryu_buf = ryu::Buffer::new();
    let mut itoa_buf = itoa::Buffer::new();
    let mut record: Vec<Vec<u8>> = vec![Vec::new(); leaves.len()];
    for r in 0..frame.num_rows() {
        for (cell, (_, data, valid)) in record.iter_mut().zip(&leaves) {
            cell.clear();
            if valid.is_some_and(|v| !v[r]) {
                continue;
            }
            match data.get(r) {
                Value::Null => {}
                Value::Str(s) => cell.extend_from_slice(s.as_bytes()),
                Value::Int(i) => cell.extend_from_slice(itoa_buf.format(i).as_bytes()),
                Value::Float(x) if x.is_finite() => {
                    cell.extend_from_slice(ryu_buf.format_finite(x).as_bytes())
                }
                Value::Float(x) => cell.extend_from_slice(x.to_string().as_bytes()),
                Value::Bool(b) => cell.extend_from_slice(if b { b"true" } else { b"false" }),
            }
        }
        w.write_record(&record).expect("csv row");
    }
    w.into_inner().expect("csv flush")
}

/// Arrow IPC stream (one batch).
pub fn arrow_ipc(frame: &Frame, nullable: &dyn Fn(&str) -> bool) -> Result<Vec<u8>, EngineError> {
    batch_ipc(&frame_to_batch(frame, nullable)?)
}

/// One batch as an Arrow IPC stream.
fn batch_ipc(batch: &RecordBatch) -> Result<Vec<u8>, EngineError> {
    // arrow's StreamEncoder hands back the framing and the batch's own buffers, so the stream is
    // copied once, into a buffer of its exact size (StreamWriter first copies the batch whole,
    // then into an output that grows by doubling).
    let mut encoder = StreamEncoder::try_new(&batch.schema())?;
    let mut pieces = encoder.encode(batch)?;
    pieces.extend(encoder.finish()?);
    let mut out = Vec::with_capacity(pieces.iter().map(|b| b.len()).sum());
    for piece in &pieces {
        out.extend_from_slice(piece.as_slice());
    }
    Ok(out)
}

/// Parquet file (one row group, snappy).
pub fn parquet(frame: &Frame, nullable: &dyn Fn(&str) -> bool) -> Result<Vec<u8>, EngineError> {
    batch_parquet(&frame_to_batch(frame, nullable)?)
}

fn batch_parquet(batch: &RecordBatch) -> Result<Vec<u8>, EngineError> {
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props))?;
    w.write(batch)?;
    w.close()?;
    Ok(out)
}

/// Encode a frame in `format`; `json` writes the JSON representation (envelopes differ by endpoint).
pub fn encode_frame(
    frame: &Frame,
    format: Format,
    nullable: &dyn Fn(&str) -> bool,
    json: impl FnOnce(&mut Vec<u8>, &Frame),
) -> Result<Vec<u8>, EngineError> {
    Ok(match format {
        Format::Json => {
            let mut out = Vec::with_capacity(frame.num_rows() * 700 + 128);
            json(&mut out, frame);
            out
        }
        Format::Csv => csv(frame),
        Format::Ndjson => ndjson(frame),
        Format::Arrow => arrow_ipc(frame, nullable)?,
        Format::Parquet => parquet(frame, nullable)?,
    })
}

/// `encode_frame` of a frame not needed afterwards: in Arrow and Parquet it is dropped once
/// converted, so the frame and the encoded answer are not held together (a timeline of many runs
/// is large).
pub fn encode_owned_frame(
    frame: Frame,
    format: Format,
    nullable: &dyn Fn(&str) -> bool,
    json: impl FnOnce(&mut Vec<u8>, &Frame),
) -> Result<Vec<u8>, EngineError> {
    match format {
        Format::Arrow | Format::Parquet => {
            let batch = frame_to_batch(&frame, nullable)?;
            drop(frame);
            if format == Format::Arrow {
                batch_ipc(&batch)
            } else {
                batch_parquet(&batch)
            }
        }
        _ => encode_frame(&frame, format, nullable, json),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn frame() -> Frame {
        Frame {
            columns: vec![
                FrameColumn {
                    name: "s".into(),
                    data: ColumnData::Str(vec![Some(Arc::from("a,\"b\"")), None]),
                },
                FrameColumn {
                    name: "f".into(),
                    data: ColumnData::Float(vec![Some(0.1), Some(1e-5)]),
                },
                FrameColumn {
                    name: "i".into(),
                    data: ColumnData::Int(vec![Some(3), None]),
                },
                FrameColumn {
                    name: "b".into(),
                    data: ColumnData::Bool(vec![Some(true), None]),
                },
            ],
        }
    }

    #[test]
    fn json_is_shortest_round_trip() {
        let mut out = Vec::new();
        json_array(&mut out, &frame());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"[{"s":"a,\"b\"","f":0.1,"i":3,"b":true},{"s":null,"f":0.00001,"i":null,"b":null}]"#
        );
    }

    /// The stream is the bytes StreamWriter writes for the batch, in a buffer of exactly its size.
    #[test]
    fn arrow_stream_is_the_writers_bytes() {
        use datafusion::arrow::ipc::writer::StreamWriter;

        let nullable = |_: &str| true;
        let got = arrow_ipc(&frame(), &nullable).unwrap();
        assert_eq!(got.capacity(), got.len());
        let batch = frame_to_batch(&frame(), &nullable).unwrap();
        let mut want = Vec::new();
        let mut w = StreamWriter::try_new(&mut want, &batch.schema()).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        drop(w);
        assert_eq!(got, want);
        let read = datafusion::arrow::ipc::reader::StreamReader::try_new(&got[..], None)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        assert_eq!(read, vec![batch]);
    }

    /// A frame encoded by value is the same answer, in every format.
    #[test]
    fn owned_frames_encode_alike() {
        let nullable = |_: &str| true;
        for format in [
            Format::Json,
            Format::Csv,
            Format::Ndjson,
            Format::Arrow,
            Format::Parquet,
        ] {
            let owned = encode_owned_frame(frame(), format, &nullable, json_array).unwrap();
            let borrowed = encode_frame(&frame(), format, &nullable, json_array).unwrap();
            assert!(!owned.is_empty());
            assert_eq!(owned, borrowed, "{}", format.name());
        }
    }

    #[test]
    fn csv_quotes_and_leaves_nulls_empty() {
        let out = String::from_utf8(csv(&frame())).unwrap();
        assert_eq!(out, "s,f,i,b\n\"a,\"\"b\"\"\",0.1,3,true\n,0.00001,,\n");
    }
}
