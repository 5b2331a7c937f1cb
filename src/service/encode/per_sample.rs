//! Long answers of raw-derived values (`itl_s`, `output_len`): one row per value, the run's key
//! columns repeated. Answers reach millions of rows, so they are not built as a `Frame`: each run
//! is a segment (its key cells, encoded once, and a borrowed slice of values) written straight to
//! the output. In Arrow and Parquet the string keys are dictionary-encoded (one dictionary for the
//! answer, a small integer per row). An Arrow answer is not encoded at all: its record batches are
//! slices of the values' own chunks, framed by arrow's `StreamEncoder` (`arrow_pieces`).

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, DictionaryArray, Float64Array, Int8Array, Int16Array, Int32Array, Int64Array,
    RecordBatch, StringArray,
};
use datafusion::arrow::buffer::{Buffer, ScalarBuffer};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::writer::StreamEncoder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::frames::json_str;
use crate::engine::EngineError;
use crate::engine::RunTable;
use crate::engine::frame::Value;
use crate::service::ask::Format;

/// The values of one run, or of one chunk of them (Arrow buffers: batches slice them without
/// copying).
#[derive(Clone)]
pub(crate) enum Values {
    Float(ScalarBuffer<f64>),
    Int(ScalarBuffer<i64>),
}

impl Values {
    pub(crate) fn len(&self) -> usize {
        match self {
            Values::Float(v) => v.len(),
            Values::Int(v) => v.len(),
        }
    }

    /// `len` values from `offset`, as an array sharing the buffer.
    fn array(&self, offset: usize, len: usize) -> ArrayRef {
        match self {
            Values::Float(v) => Arc::new(Float64Array::new(v.slice(offset, len), None)),
            Values::Int(v) => Arc::new(Int64Array::new(v.slice(offset, len), None)),
        }
    }
}

/// One run's rows, or a chunk of them (a run's chunks are consecutive segments): its table row
/// and its values.
pub(crate) struct Segment {
    pub row: usize,
    pub values: Values,
}

/// Rows per Arrow record batch / Parquet write.
const BATCH_ROWS: usize = 1 << 16;

fn ryu_or_null(out: &mut Vec<u8>, x: f64, null: &[u8]) {
    if x.is_finite() {
        out.extend_from_slice(ryu::Buffer::new().format_finite(x).as_bytes());
    } else {
        out.extend_from_slice(null);
    }
}

fn csv_cell(out: &mut Vec<u8>, s: &str) {
    if s.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        out.push(b'"');
        out.extend_from_slice(s.replace('"', "\"\"").as_bytes());
        out.push(b'"');
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

/// The text of each row's key part, per segment: `{"run_id":...,"max_num_seqs":8,"itl_s":` for
/// JSON, `id,task,...,8,` for CSV.
fn prefix(t: &RunTable, keys: &[usize], row: usize, value: &str, format: Format) -> Vec<u8> {
    let mut out = Vec::new();
    let json = format != Format::Csv;
    if json {
        out.push(b'{');
    }
    for &k in keys {
        let name = &t.fields[k].name;
        let cell = t.column(k).get(row);
        if json {
            json_str(&mut out, name);
            out.push(b':');
            match cell {
                Value::Null => out.extend_from_slice(b"null"),
                Value::Str(s) => json_str(&mut out, s),
                Value::Int(i) => out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes()),
                Value::Float(x) => ryu_or_null(&mut out, x, b"null"),
                Value::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            }
            out.push(b',');
        } else {
            match cell {
                Value::Null => {}
                Value::Str(s) => csv_cell(&mut out, s),
                Value::Int(i) => out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes()),
                Value::Float(x) if x.is_finite() => {
                    out.extend_from_slice(ryu::Buffer::new().format_finite(x).as_bytes())
                }
                Value::Float(x) => out.extend_from_slice(x.to_string().as_bytes()),
                Value::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            }
            out.push(b',');
        }
    }
    if json {
        json_str(&mut out, value);
        out.push(b':');
    }
    out
}

/// Bytes of text gathered before they are handed to the writer.
const TEXT_FLUSH: usize = 1 << 20;

fn text(
    t: &RunTable,
    keys: &[usize],
    segs: &[Segment],
    value: &str,
    format: Format,
    sink: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(TEXT_FLUSH + 4096);
    let (row_end, sep): (&[u8], &[u8]) = match format {
        Format::Json => (b"}", b","),
        Format::Ndjson => (b"}\n", b""),
        _ => (b"\n", b""),
    };
    match format {
        Format::Json => out.push(b'['),
        Format::Csv => {
            for &k in keys {
                csv_cell(&mut out, t.fields[k].name);
                out.push(b',');
            }
            csv_cell(&mut out, value);
            out.push(b'\n');
        }
        _ => {}
    }
    let null: &[u8] = if format == Format::Csv { b"" } else { b"null" };
    let mut first = true;
    let mut ryu_buf = ryu::Buffer::new();
    let mut itoa_buf = itoa::Buffer::new();
    for seg in segs {
        let pre = prefix(t, keys, seg.row, value, format);
        let mut row = |out: &mut Vec<u8>| {
            if !first {
                out.extend_from_slice(sep);
            }
            first = false;
            out.extend_from_slice(&pre);
        };
        match &seg.values {
            Values::Float(v) => {
                for &x in v.iter() {
                    if out.len() >= TEXT_FLUSH {
                        sink.write_all(&out)?;
                        out.clear();
                    }
                    row(&mut out);
                    if x.is_finite() {
                        out.extend_from_slice(ryu_buf.format_finite(x).as_bytes());
                    } else if format == Format::Csv {
                        out.extend_from_slice(x.to_string().as_bytes());
                    } else {
                        out.extend_from_slice(null);
                    }
                    out.extend_from_slice(row_end);
                }
            }
            Values::Int(v) => {
                for &x in v.iter() {
                    if out.len() >= TEXT_FLUSH {
                        sink.write_all(&out)?;
                        out.clear();
                    }
                    row(&mut out);
                    out.extend_from_slice(itoa_buf.format(x).as_bytes());
                    out.extend_from_slice(row_end);
                }
            }
        }
    }
    if format == Format::Json {
        out.push(b']');
    }
    sink.write_all(&out)
}

/// A key column for Arrow: a dictionary over the answer's distinct values (the narrowest index
/// type that fits) with one index per row, whatever the column's type.
struct KeyArrow {
    values: ArrayRef,
    index: Vec<usize>,
    key_type: DataType,
}

fn key_arrow(t: &RunTable, k: usize, segs: &[Segment]) -> KeyArrow {
    use crate::engine::fields::FieldType;
    let col = t.column(k);
    let mut distinct: Vec<Value> = Vec::new();
    let index = segs
        .iter()
        .map(|s| {
            let v = col.get(s.row);
            match distinct.iter().position(|d| *d == v) {
                Some(i) => i,
                None => {
                    distinct.push(v);
                    distinct.len() - 1
                }
            }
        })
        .collect();
    let values: ArrayRef = match t.fields[k].ty {
        FieldType::String => Arc::new(StringArray::from(
            distinct
                .iter()
                .map(|v| match v {
                    Value::Str(s) => Some(*s),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        )),
        FieldType::Int64 | FieldType::Bool => Arc::new(Int64Array::from(
            distinct
                .iter()
                .map(|v| match v {
                    Value::Int(i) => Some(*i),
                    Value::Bool(b) => Some(i64::from(*b)),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        )),
        FieldType::Double => Arc::new(Float64Array::from(
            distinct.iter().map(Value::as_f64).collect::<Vec<_>>(),
        )),
    };
    let key_type = if distinct.len() <= i8::MAX as usize {
        DataType::Int8
    } else if distinct.len() <= i16::MAX as usize {
        DataType::Int16
    } else {
        DataType::Int32
    };
    KeyArrow {
        values,
        index,
        key_type,
    }
}

impl KeyArrow {
    fn data_type(&self) -> DataType {
        DataType::Dictionary(
            Box::new(self.key_type.clone()),
            Box::new(self.values.data_type().clone()),
        )
    }

    /// `n` rows of segment `s`.
    fn repeat(&self, s: usize, n: usize) -> Result<ArrayRef, EngineError> {
        let i = self.index[s];
        let values = self.values.clone();
        Ok(match self.key_type {
            DataType::Int8 => Arc::new(DictionaryArray::try_new(
                Int8Array::from(vec![i as i8; n]),
                values,
            )?) as ArrayRef,
            DataType::Int16 => Arc::new(DictionaryArray::try_new(
                Int16Array::from(vec![i as i16; n]),
                values,
            )?),
            _ => Arc::new(DictionaryArray::try_new(
                Int32Array::from(vec![i as i32; n]),
                values,
            )?),
        })
    }
}

/// The answer's schema, and its record batches of at most `BATCH_ROWS` rows handed to `sink`
/// one at a time (a run's rows never share a batch with another run's).
fn schema(
    t: &RunTable,
    keys: &[usize],
    cols: &[KeyArrow],
    segs: &[Segment],
    value: &str,
) -> SchemaRef {
    let value_type = match segs.first().map(|s| &s.values) {
        Some(Values::Int(_)) => DataType::Int64,
        _ => DataType::Float64,
    };
    let mut fields: Vec<Field> = keys
        .iter()
        .zip(cols)
        .map(|(&k, c)| {
            let name = &t.fields[k].name;
            Field::new(*name, c.data_type(), t.is_nullable(name))
        })
        .collect();
    fields.push(Field::new(value, value_type, false));
    Arc::new(Schema::new(fields))
}

fn for_each_batch(
    schema: &SchemaRef,
    cols: &[KeyArrow],
    segs: &[Segment],
    mut sink: impl FnMut(&RecordBatch) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    // A run's consecutive segments (the chunks of its values) share its key columns, built once
    // and sliced per batch; a batch is a slice of one chunk (so no values are copied), and a
    // chunk of more than `BATCH_ROWS` values is cut.
    let mut s = 0;
    while s < segs.len() {
        let run = segs[s..]
            .iter()
            .take_while(|g| g.row == segs[s].row)
            .count();
        let group = &segs[s..s + run];
        let longest = group.iter().map(|g| g.values.len()).max().unwrap_or(0);
        let keys = cols
            .iter()
            .map(|c| c.repeat(s, longest.min(BATCH_ROWS)))
            .collect::<Result<Vec<_>, _>>()?;
        for g in group {
            let n = g.values.len();
            let mut start = 0;
            while start < n {
                let len = (n - start).min(BATCH_ROWS);
                let mut arrays: Vec<ArrayRef> = keys.iter().map(|k| k.slice(0, len)).collect();
                arrays.push(g.values.array(start, len));
                sink(&RecordBatch::try_new(schema.clone(), arrays)?)?;
                start += len;
            }
        }
        s += run;
    }
    Ok(())
}

/// Encode the long answer: key columns `keys` (table field indexes), then the value column.
pub(crate) fn encode_long(
    t: &RunTable,
    keys: &[usize],
    segs: &[Segment],
    value: &str,
    format: Format,
) -> Result<Vec<u8>, EngineError> {
    let rows: usize = segs.iter().map(|s| s.values.len()).sum();
    let mut out = Vec::with_capacity(rows * bytes_per_row(keys, format) + 64 * 1024);
    write_long(t, keys, segs, value, format, &mut out)?;
    Ok(out)
}

/// The long answer as an Arrow IPC stream, in pieces: the stream's framing and metadata, and
/// the batches' buffers themselves (the derived values and the shared key indexes), not copied.
/// The pieces, in order, are the bytes `StreamWriter` would write.
pub(crate) fn arrow_pieces(
    t: &RunTable,
    keys: &[usize],
    segs: &[Segment],
    value: &str,
) -> Result<Vec<bytes::Bytes>, EngineError> {
    let cols: Vec<KeyArrow> = keys.iter().map(|&k| key_arrow(t, k, segs)).collect();
    let schema = schema(t, keys, &cols, segs, value);
    let mut encoder = StreamEncoder::try_new(&schema)?;
    let mut pieces = Pieces::default();
    for_each_batch(&schema, &cols, segs, |b| {
        encoder.encode(b)?.into_iter().for_each(|b| pieces.push(b));
        Ok(())
    })?;
    encoder.finish()?.into_iter().for_each(|b| pieces.push(b));
    Ok(pieces.finish())
}

/// Pieces of a body: large buffers shared as they are, runs of small ones (framing, padding,
/// empty validity buffers) copied together, so the body is not hundreds of tiny writes.
#[derive(Default)]
struct Pieces {
    done: Vec<bytes::Bytes>,
    small: Vec<u8>,
}

impl Pieces {
    /// Buffers below this size are copied together.
    const SMALL: usize = 8 << 10;

    fn push(&mut self, b: Buffer) {
        if b.len() < Self::SMALL {
            self.small.extend_from_slice(b.as_slice());
            return;
        }
        if !self.small.is_empty() {
            self.done.push(std::mem::take(&mut self.small).into());
        }
        // `Bytes` that own the Arrow buffer (no copy).
        struct Owner(Buffer);
        impl AsRef<[u8]> for Owner {
            fn as_ref(&self) -> &[u8] {
                self.0.as_slice()
            }
        }
        self.done.push(bytes::Bytes::from_owner(Owner(b)));
    }

    fn finish(mut self) -> Vec<bytes::Bytes> {
        if !self.small.is_empty() {
            self.done.push(self.small.into());
        }
        self.done
    }
}

/// About how many bytes the long answer of `segs` takes in `format`: for the text formats, each
/// row's key columns as written (the run's task, model id... repeated on every row) and its
/// number; for Arrow and Parquet, the values.
pub(crate) fn estimated_bytes(
    t: &RunTable,
    keys: &[usize],
    segs: &[Segment],
    value: &str,
    format: Format,
) -> usize {
    match format {
        Format::Json | Format::Ndjson | Format::Csv => {
            // A shortest-round-trip float is at most 24 characters, with a separator or two.
            let mut last: Option<(usize, usize)> = None;
            segs.iter()
                .map(|s| {
                    let per_row = match last {
                        Some((row, n)) if row == s.row => n,
                        _ => {
                            let n = prefix(t, keys, s.row, value, format).len() + 26;
                            last = Some((s.row, n));
                            n
                        }
                    };
                    s.values.len() * per_row
                })
                .sum()
        }
        _ => segs.iter().map(|s| s.values.len()).sum::<usize>() * bytes_per_row(keys, format),
    }
}

/// About how many bytes a row of a long answer takes in `format`.
pub(crate) fn bytes_per_row(keys: &[usize], format: Format) -> usize {
    match format {
        // A dictionary index per key column and the 8-byte value.
        Format::Arrow => keys.len() * 2 + 8,
        Format::Parquet => 8,
        Format::Json | Format::Ndjson | Format::Csv => 24,
    }
}

/// `encode_long` written to `out` as it is produced (so an answer of millions of rows can be
/// streamed rather than held).
pub(crate) fn write_long<W: std::io::Write + Send>(
    t: &RunTable,
    keys: &[usize],
    segs: &[Segment],
    value: &str,
    format: Format,
    out: W,
) -> Result<(), EngineError> {
    match format {
        Format::Json | Format::Ndjson | Format::Csv => {
            let mut out = out;
            Ok(text(t, keys, segs, value, format, &mut out)?)
        }
        Format::Arrow => {
            let mut out = out;
            for piece in arrow_pieces(t, keys, segs, value)? {
                out.write_all(&piece)?;
            }
            Ok(())
        }
        Format::Parquet => {
            let cols: Vec<KeyArrow> = keys.iter().map(|&k| key_arrow(t, k, segs)).collect();
            let schema = schema(t, keys, &cols, segs, value);
            let props = WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .build();
            let mut w = ArrowWriter::try_new(out, schema.clone(), Some(props))?;
            for_each_batch(&schema, &cols, segs, |b| Ok(w.write(b)?))?;
            w.close()?;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::Array;

    use super::*;

    /// data/sample and the key columns of the LLM long answers.
    async fn sample_keys() -> (crate::service::snapshot::Snapshot, Vec<usize>) {
        use crate::service::open::{DataLocation, load};
        let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/data/sample");
        let dataset = load(&DataLocation::detect(sample)).await.unwrap();
        let keys: Vec<usize> = ["task", "model_id", "num_gpus", "max_num_seqs"]
            .iter()
            .map(|n| dataset.llm.field_index(n).unwrap())
            .collect();
        (dataset, keys)
    }

    /// The estimate that decides whether a long answer is streamed is close to, and not under,
    /// the bytes each text format writes (the key columns repeated on every row count).
    #[tokio::test]
    async fn estimated_bytes_bound_the_text_answers() {
        let (dataset, keys) = sample_keys().await;
        let t = &dataset.llm;
        let values: Vec<f64> = (0..5000).map(|i| 0.001 + i as f64 * 1.0e-7).collect();
        let segs = vec![
            Segment {
                row: 3,
                values: Values::Float(values[..3000].to_vec().into()),
            },
            Segment {
                row: 7,
                values: Values::Float(values[3000..].to_vec().into()),
            },
        ];
        for format in [Format::Json, Format::Ndjson, Format::Csv] {
            let body = encode_long(t, &keys, &segs, "itl_s", format).unwrap();
            let estimate = estimated_bytes(t, &keys, &segs, "itl_s", format);
            assert!(
                estimate >= body.len() && estimate <= body.len() * 3 / 2,
                "{format:?}: estimated {estimate}, written {}",
                body.len()
            );
        }
    }

    /// Batches are slices of the chunks, in order, cut at `BATCH_ROWS`; the Arrow pieces joined
    /// are the bytes arrow's `StreamWriter` writes for those batches, and read back as the values.
    #[tokio::test]
    async fn arrow_pieces_are_the_stream() {
        use datafusion::arrow::ipc::reader::StreamReader;
        use datafusion::arrow::ipc::writer::StreamWriter;

        let (dataset, keys) = sample_keys().await;
        let t = &dataset.llm;
        let all: Vec<f64> = (0..BATCH_ROWS * 2 + 100).map(|i| i as f64 * 0.5).collect();
        let cuts = [0, 30, 31, BATCH_ROWS + 70, all.len()];
        let mut segs: Vec<Segment> = cuts
            .windows(2)
            .map(|w| Segment {
                row: 3,
                values: Values::Float(all[w[0]..w[1]].to_vec().into()),
            })
            .collect();
        segs.push(Segment {
            row: 5,
            values: Values::Float(vec![9.0, 8.0].into()),
        });

        let cols: Vec<KeyArrow> = keys.iter().map(|&k| key_arrow(t, k, &segs)).collect();
        let schema = schema(t, &keys, &cols, &segs, "itl_s");
        let mut batches = Vec::new();
        for_each_batch(&schema, &cols, &segs, |b| {
            batches.push(b.clone());
            Ok(())
        })
        .unwrap();
        let lens: Vec<usize> = batches.iter().map(RecordBatch::num_rows).collect();
        assert_eq!(lens, [30, 1, BATCH_ROWS, 39, BATCH_ROWS, 30, 2]);

        let mut reference = Vec::new();
        let mut w = StreamWriter::try_new(&mut reference, &schema).unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
        let joined: Vec<u8> = arrow_pieces(t, &keys, &segs, "itl_s").unwrap().concat();
        assert_eq!(joined, reference);

        let read: Vec<f64> = StreamReader::try_new(std::io::Cursor::new(joined), None)
            .unwrap()
            .flat_map(|b| {
                let b = b.unwrap();
                let v = b.column(4).as_any().downcast_ref::<Float64Array>().unwrap();
                assert_eq!(v.null_count(), 0);
                v.values().to_vec()
            })
            .collect();
        let mut want = all.clone();
        want.extend([9.0, 8.0]);
        assert_eq!(read, want);
    }
}
