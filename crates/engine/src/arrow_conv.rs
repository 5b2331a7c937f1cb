//! Conversions between Arrow arrays and `Frame` columns: the lenient reader that accepts what
//! pandas/pyarrow may write for a published column, and the writer used for Arrow IPC, Parquet
//! and the DataFusion tables; and the reproducible parquet writer of compiled and imported tables.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int32Array, Int64Array,
    NullBufferBuilder, RecordBatch, StringArray, StructArray,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Fields, Int32Type, Schema, SchemaRef};

use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::error::EngineError;
use super::fields::{FieldSpec, FieldType};
use super::frame::{ColumnData, Frame, FrameColumn};

fn type_error(spec: &FieldSpec, dt: &DataType) -> EngineError {
    EngineError::Load(format!(
        "column '{}' has type {dt}, expected {:?} (or a type that converts losslessly)",
        spec.name, spec.ty
    ))
}

/// Read a published column. Nullable integer columns may arrive as doubles (pandas turns an
/// int column with nulls into float64): integral values are accepted, NaN becomes null, and a
/// fractional value is an error. An all-null column may arrive with the Arrow `Null` type.
pub fn column_from_array(spec: &FieldSpec, array: &ArrayRef) -> Result<ColumnData, EngineError> {
    let dt = array.data_type();
    if *dt == DataType::Null {
        let n = array.len();
        return Ok(match spec.ty {
            FieldType::String => ColumnData::Str(vec![None; n]),
            FieldType::Int64 => ColumnData::Int(vec![None; n]),
            FieldType::Double => ColumnData::Float(vec![None; n]),
            FieldType::Bool => ColumnData::Bool(vec![None; n]),
        });
    }
    match spec.ty {
        FieldType::String => {
            if !matches!(
                dt,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            ) {
                return Err(type_error(spec, dt));
            }
            let a = cast(array, &DataType::Utf8)?;
            let a = a
                .as_any()
                .downcast_ref::<StringArray>()
                .expect("cast to Utf8");
            // Interning keeps repeated values (task, model_id, ...) as shared strings.
            let mut interned: std::collections::HashMap<&str, Arc<str>> = Default::default();
            Ok(ColumnData::Str(
                a.iter()
                    .map(|v| v.map(|s| interned.entry(s).or_insert_with(|| Arc::from(s)).clone()))
                    .collect(),
            ))
        }
        FieldType::Int64 => {
            if dt.is_integer() {
                let a = cast(array, &DataType::Int64)?;
                let a = a
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .expect("cast to Int64");
                Ok(ColumnData::Int(a.iter().collect()))
            } else if dt.is_floating() {
                let a = cast(array, &DataType::Float64)?;
                let a = a
                    .as_any()
                    .downcast_ref::<Float64Array>()
                    .expect("cast to Float64");
                let mut out = Vec::with_capacity(a.len());
                for v in a.iter() {
                    out.push(match v {
                        None => None,
                        Some(x) if x.is_nan() => None,
                        Some(x) if x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15 => {
                            Some(x as i64)
                        }
                        Some(x) => {
                            return Err(EngineError::Load(format!(
                                "column '{}' holds the non-integer value {x}",
                                spec.name
                            )));
                        }
                    });
                }
                Ok(ColumnData::Int(out))
            } else {
                Err(type_error(spec, dt))
            }
        }
        FieldType::Double => {
            if !(dt.is_floating() || dt.is_integer()) {
                return Err(type_error(spec, dt));
            }
            let a = cast(array, &DataType::Float64)?;
            let a = a
                .as_any()
                .downcast_ref::<Float64Array>()
                .expect("cast to Float64");
            // NaN is how pandas writes a missing float: the toolkit turns it into None.
            Ok(ColumnData::Float(
                a.iter().map(|v| v.filter(|x| !x.is_nan())).collect(),
            ))
        }
        FieldType::Bool => {
            if *dt != DataType::Boolean {
                return Err(type_error(spec, dt));
            }
            let a = array
                .as_any()
                .downcast_ref::<BooleanArray>()
                .expect("Boolean");
            Ok(ColumnData::Bool(a.iter().collect()))
        }
    }
}

fn arrow_type(data: &ColumnData) -> DataType {
    match data {
        ColumnData::Str(_) | ColumnData::Json(_) => DataType::Utf8,
        ColumnData::Int(_) => DataType::Int64,
        ColumnData::Float(_) => DataType::Float64,
        ColumnData::Bool(_) => DataType::Boolean,
        ColumnData::Struct { fields, .. } => DataType::Struct(struct_fields(fields)),
    }
}

/// The Arrow field of a column; JSON text is marked with the canonical `arrow.json` extension
/// type, so readers that know it parse the values.
fn field_of(c: &FrameColumn, nullable: bool) -> Field {
    let field = Field::new(&c.name, arrow_type(&c.data), nullable);
    match c.data {
        ColumnData::Json(_) => field.with_metadata(
            [("ARROW:extension:name".to_string(), "arrow.json".to_string())]
                .into_iter()
                .collect(),
        ),
        _ => field,
    }
}

fn struct_fields(cols: &[FrameColumn]) -> Fields {
    cols.iter().map(|c| field_of(c, true)).collect()
}

fn to_array(data: &ColumnData) -> ArrayRef {
    match data {
        ColumnData::Str(v) | ColumnData::Json(v) => {
            Arc::new(v.iter().map(|s| s.as_deref()).collect::<StringArray>())
        }
        ColumnData::Int(v) => Arc::new(v.iter().copied().collect::<Int64Array>()),
        ColumnData::Float(v) => Arc::new(v.iter().copied().collect::<Float64Array>()),
        ColumnData::Bool(v) => Arc::new(v.iter().copied().collect::<BooleanArray>()),
        ColumnData::Struct { fields, valid } => {
            let arrays: Vec<ArrayRef> = fields.iter().map(|c| to_array(&c.data)).collect();
            let mut nulls = NullBufferBuilder::new(valid.len());
            for &v in valid {
                nulls.append(v);
            }
            Arc::new(StructArray::new(
                struct_fields(fields),
                arrays,
                nulls.finish(),
            ))
        }
    }
}

/// The Arrow schema of a frame; `nullable` says which top-level columns may hold nulls.
pub fn frame_schema(frame: &Frame, nullable: &dyn Fn(&str) -> bool) -> SchemaRef {
    Arc::new(Schema::new(
        frame
            .columns
            .iter()
            .map(|c| field_of(c, nullable(&c.name)))
            .collect::<Vec<_>>(),
    ))
}

/// A frame as one record batch (Utf8 / Int64 / Float64 / Boolean / Struct columns).
pub fn frame_to_batch(
    frame: &Frame,
    nullable: &dyn Fn(&str) -> bool,
) -> Result<RecordBatch, EngineError> {
    let schema = frame_schema(frame, nullable);
    let arrays: Vec<ArrayRef> = frame.columns.iter().map(|c| to_array(&c.data)).collect();
    if arrays.is_empty() {
        return Ok(RecordBatch::new_empty(schema));
    }
    Ok(RecordBatch::try_new(schema, arrays)?)
}

/// [`frame_to_batch`] with the text columns (not JSON) as dictionaries of Int32 keys over Utf8
/// values: for files whose text repeats on many rows (a run id on each of its samples), which
/// then hold each distinct value once in memory, and read back into shared strings.
pub fn frame_to_dictionary_batch(
    frame: &Frame,
    nullable: &(dyn Fn(&str) -> bool + Sync),
) -> Result<RecordBatch, EngineError> {
    use rayon::prelude::*;
    let dictionary = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = frame
        .columns
        .par_iter()
        .map(|c| match &c.data {
            ColumnData::Str(v) => (
                Field::new(&c.name, dictionary.clone(), nullable(&c.name)),
                dictionary_array(v),
            ),
            data => (field_of(c, nullable(&c.name)), to_array(data)),
        })
        .unzip();
    let schema = Arc::new(Schema::new(fields));
    if arrays.is_empty() {
        return Ok(RecordBatch::new_empty(schema));
    }
    Ok(RecordBatch::try_new(schema, arrays)?)
}

/// Text as a dictionary array: each distinct value once, a key per row. Rows that share one `Arc`
/// (consecutive rows of one run) are recognised by pointer, without hashing the text.
fn dictionary_array(v: &[Option<Arc<str>>]) -> ArrayRef {
    let mut values: Vec<&str> = Vec::new();
    let mut index: std::collections::HashMap<&str, i32> = Default::default();
    let mut last: Option<(&Arc<str>, i32)> = None;
    let keys: Int32Array = v
        .iter()
        .map(|s| {
            let s = s.as_ref()?;
            if let Some((p, k)) = last
                && Arc::ptr_eq(p, s)
            {
                return Some(k);
            }
            let k = *index.entry(&**s).or_insert_with(|| {
                values.push(s);
                values.len() as i32 - 1
            });
            last = Some((s, k));
            Some(k)
        })
        .collect();
    Arc::new(
        DictionaryArray::<Int32Type>::try_new(keys, Arc::new(StringArray::from(values)))
            .expect("every key indexes the values"),
    )
}

/// A frame written by `frame_to_batch` read back: Utf8 (JSON text where the field carries the
/// `arrow.json` extension type), Int64, Float64 and Boolean columns, and structs of them.
pub fn frame_from_batch(batch: &RecordBatch) -> Result<Frame, EngineError> {
    let schema = batch.schema();
    let columns = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(f, a)| {
            column_of(f, a).map(|data| FrameColumn {
                name: f.name().clone(),
                data,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Frame { columns })
}

fn column_of(field: &Field, array: &ArrayRef) -> Result<ColumnData, EngineError> {
    let unsupported = || {
        EngineError::Load(format!(
            "column '{}' has type {}",
            field.name(),
            array.data_type()
        ))
    };
    Ok(match array.data_type() {
        DataType::Utf8 => {
            let a = array
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or_else(unsupported)?;
            let v: Vec<Option<Arc<str>>> = a.iter().map(|s| s.map(Arc::from)).collect();
            if field
                .metadata()
                .get("ARROW:extension:name")
                .map(String::as_str)
                == Some("arrow.json")
            {
                ColumnData::Json(v)
            } else {
                ColumnData::Str(v)
            }
        }
        DataType::Dictionary(key, value)
            if **key == DataType::Int32 && **value == DataType::Utf8 =>
        {
            // Each distinct value becomes one shared string.
            let d = array
                .as_any()
                .downcast_ref::<DictionaryArray<Int32Type>>()
                .ok_or_else(unsupported)?;
            let values = d
                .values()
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or_else(unsupported)?;
            let shared: Vec<Option<Arc<str>>> = values.iter().map(|s| s.map(Arc::from)).collect();
            ColumnData::Str(
                d.keys()
                    .iter()
                    .map(|k| k.and_then(|k| shared.get(k as usize).cloned().flatten()))
                    .collect(),
            )
        }
        DataType::Int64 => ColumnData::Int(
            array
                .as_any()
                .downcast_ref::<Int64Array>()
                .ok_or_else(unsupported)?
                .iter()
                .collect(),
        ),
        DataType::Float64 => ColumnData::Float(
            array
                .as_any()
                .downcast_ref::<Float64Array>()
                .ok_or_else(unsupported)?
                .iter()
                .collect(),
        ),
        DataType::Boolean => ColumnData::Bool(
            array
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(unsupported)?
                .iter()
                .collect(),
        ),
        DataType::Struct(fields) => {
            let s = array
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(unsupported)?;
            ColumnData::Struct {
                fields: fields
                    .iter()
                    .zip(s.columns())
                    .map(|(f, a)| {
                        column_of(f, a).map(|data| FrameColumn {
                            name: f.name().clone(),
                            data,
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
                valid: (0..s.len()).map(|i| s.is_valid(i)).collect(),
            }
        }
        _ => return Err(unsupported()),
    })
}

/// Write a frame as a snappy-compressed parquet file with a fixed writer id, so the same input
/// always gives the same bytes.
pub fn write_parquet(
    path: &Path,
    frame: &Frame,
    nullable: &dyn Fn(&str) -> bool,
) -> Result<(), EngineError> {
    write_parquet_with(path, frame, nullable, &[])
}

/// `write_parquet` with key-value metadata in the file's footer.
pub fn write_parquet_with(
    path: &Path,
    frame: &Frame,
    nullable: &dyn Fn(&str) -> bool,
    metadata: &[(&str, String)],
) -> Result<(), EngineError> {
    let kv = metadata
        .iter()
        .map(|(k, v)| parquet::file::metadata::KeyValue::new(k.to_string(), v.clone()))
        .collect::<Vec<_>>();
    let props = parquet_properties()
        .set_key_value_metadata((!kv.is_empty()).then_some(kv))
        .build();
    write_parquet_props(path, frame_to_batch(frame, nullable)?, props)
}

/// The writer settings every parquet file of ours starts from (snappy, our name as the writer).
pub fn parquet_properties() -> parquet::file::properties::WriterPropertiesBuilder {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by("mlenergy-server".to_string())
}

/// The text of each row of a text dictionary column (tests of this crate and of the importers
/// compare dictionaries that number their values differently).
pub fn dictionary_texts(a: &ArrayRef) -> Vec<Option<String>> {
    use arrow::array::{Array, AsArray};
    let d = a.as_dictionary::<Int32Type>();
    let v = d.values().as_string::<i32>();
    (0..a.len())
        .map(|r| {
            d.is_valid(r)
                .then(|| v.value(d.keys().value(r) as usize).to_string())
        })
        .collect()
}

/// A table to write: its schema, its rows, and any column's rows of a range as an array (made
/// when asked for, so a table kept in another shape need not exist as columns at once).
pub trait Columns: Sync {
    fn schema(&self) -> SchemaRef;
    fn num_rows(&self) -> usize;
    /// Column `c`'s rows `offset..offset + len`.
    fn slice(&self, c: usize, offset: usize, len: usize) -> ArrayRef;
    /// The same rows run-end encoded (`RunEndEncoded(Int32, <the column's type>)`), when the
    /// table holds them as runs: a writer that encodes runs takes them without the rows being
    /// made. `None` (the default): ask [`Columns::slice`].
    fn runs(&self, _c: usize, _offset: usize, _len: usize) -> Option<ArrayRef> {
        None
    }
    /// Column `c`'s codec when the table knows better than the writer's default (values that
    /// do not compress). `None` (the default): the writer's.
    fn codec(&self, _c: usize) -> Option<parquet::basic::Compression> {
        None
    }
}

impl Columns for RecordBatch {
    fn schema(&self) -> SchemaRef {
        RecordBatch::schema(self)
    }
    fn num_rows(&self) -> usize {
        RecordBatch::num_rows(self)
    }
    fn slice(&self, c: usize, offset: usize, len: usize) -> ArrayRef {
        self.column(c).slice(offset, len)
    }
}

/// [`write_parquet_props`] with the columns encoded on every core: the rows are cut into row
/// groups of at most the properties' `max_row_group_row_count`, and every column of every row
/// group is one task (a large table written once, such as an import's million latency samples,
/// keeps both cores busy). A task feeds its column to the writer in slices, so the writer's
/// per-row level buffers stay small and are reused. The file is written as the chunks are
/// appended (the caller names a temporary path when it wants the old file kept until the end).
pub fn write_parquet_parallel(
    path: &Path,
    batch: &dyn Columns,
    props: WriterProperties,
) -> Result<(), EngineError> {
    use parquet::arrow::arrow_writer::{ArrowColumnChunk, compute_leaves};
    use rayon::prelude::*;
    const SLICE: usize = 64 * 1024;
    let schema = batch.schema();
    let group_rows = props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    // The Arrow writer's own set-up embeds the Arrow schema (dictionaries, JSON columns) in the
    // file; its lower-level writers then take the columns.
    let (mut file, factory) =
        ArrowWriter::try_new(out, schema.clone(), Some(props.clone()))?.into_serialized_writer()?;
    let rows = batch.num_rows();
    let groups: Vec<(usize, usize)> = (0..rows.div_ceil(group_rows))
        .map(|g| (g * group_rows, group_rows.min(rows - g * group_rows)))
        .collect();
    // One writer per (row group, column); a nested column would have several leaves, and every
    // column here has one.
    let mut tasks = Vec::new();
    for (g, &(offset, len)) in groups.iter().enumerate() {
        let writers = factory.create_column_writers(g)?;
        if writers.len() != schema.fields().len() {
            return Err(parquet::errors::ParquetError::General(
                "a nested column cannot be written in parallel".into(),
            )
            .into());
        }
        for (c, (w, field)) in writers.into_iter().zip(schema.fields()).enumerate() {
            tasks.push((g, c, w, field.clone(), offset, len));
        }
    }
    /// A column chunk as the Arrow writer encoded it, or as `parquet_runs` did.
    enum Chunk {
        Arrow(ArrowColumnChunk),
        Runs(bytes::Bytes, parquet::column::writer::ColumnCloseResult),
    }
    let descr = file.schema_descr();
    let descr: Vec<_> = (0..descr.num_columns()).map(|i| descr.column(i)).collect();
    let chunks: Vec<(usize, Chunk)> = tasks
        .into_par_iter()
        .map(|(g, c, mut w, field, offset, len)| {
            // A column of long runs is encoded from its runs (no per-row dictionary lookup):
            // as the table holds them if it does, else found in the row group's array.
            // Otherwise the writer takes it in slices: of the row group's array if it was made
            // for the runs, else each made as it is needed.
            let may_run = super::parquet_runs::may_take(field.data_type());
            let of_runs = |a: &ArrayRef| super::parquet_runs::chunk(a, descr[c].clone(), &props);
            if let Some(held) = may_run.then(|| batch.runs(c, offset, len)).flatten()
                && let Some((bytes, close)) = of_runs(&held)?
            {
                return Ok((g, Chunk::Runs(bytes, close)));
            }
            let whole = may_run.then(|| batch.slice(c, offset, len));
            if let Some(whole) = &whole
                && let Some((bytes, close)) = of_runs(whole)?
            {
                return Ok((g, Chunk::Runs(bytes, close)));
            }
            let mut at = 0;
            while at < len {
                let n = SLICE.min(len - at);
                let slice = match &whole {
                    Some(whole) => whole.slice(at, n),
                    None => batch.slice(c, offset + at, n),
                };
                for leaf in compute_leaves(&field, &slice)? {
                    w.write(&leaf)?;
                }
                at += n;
            }
            Ok((g, Chunk::Arrow(w.close()?)))
        })
        .collect::<Result<_, EngineError>>()?;
    let mut chunks = chunks.into_iter().peekable();
    for g in 0..groups.len() {
        let mut group = file.next_row_group()?;
        while let Some((_, chunk)) = chunks.next_if(|(cg, _)| *cg == g) {
            match chunk {
                Chunk::Arrow(chunk) => chunk.append_to_row_group(&mut group)?,
                Chunk::Runs(bytes, close) => group.append_column(&bytes, close)?,
            }
        }
        group.close()?;
    }
    file.into_inner()?
        .into_inner()
        .map_err(|e| e.into_error())?;
    Ok(())
}

/// `write_parquet` of a record batch, with the writer settings given.
pub fn write_parquet_props(
    path: &Path,
    batch: RecordBatch,
    props: WriterProperties,
) -> Result<(), EngineError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props))?;
    w.write(&batch)?;
    w.close()?;
    std::fs::write(path, buf)?;
    Ok(())
}
