//! Column chunks of long runs, encoded here instead of by the Arrow writer.
//!
//! A column whose rows come in long runs of one value (the run id of a million latency samples,
//! their kind, their process) is written as parquet's own writer would write it with dictionary
//! encoding: a dictionary page of the distinct values (PLAIN), then data pages of their indices
//! in the RLE/bit-packed hybrid encoding. The difference is the cost: the Arrow writer looks up
//! every row's value in a hash table (text is hashed and compared byte by byte, row after row),
//! while here the runs are found by comparing neighbours, and each run is one RLE run. Readers
//! see an ordinary dictionary-encoded chunk.
//!
//! Only text dictionaries (`Dictionary(Int32, Utf8)`) and `Int64` columns are taken, and only
//! when their runs are long: [`chunk`] answers `None` otherwise, and the caller writes the
//! column the usual way. A table that holds a column as runs can hand it over run-end encoded
//! (`RunEndEncoded(Int32, <the column's type>)`), and its rows are never made.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Int32Type, Int64Type};
use bytes::Bytes;
use parquet::basic::{Compression, Encoding};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::ByteArray;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ColumnChunkMetaData, OffsetIndexBuilder};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

/// A column is taken when it has at most one run per this many rows.
const MIN_MEAN_RUN: usize = 8;

/// The distinct values of a chunk, in order of first appearance.
#[derive(Debug, PartialEq)]
enum Dict<'a> {
    Text(Vec<&'a str>),
    Int(Vec<i64>),
}

impl Dict<'_> {
    /// How many distinct values the chunk has.
    fn distinct(&self) -> usize {
        match self {
            Dict::Text(v) => v.len(),
            Dict::Int(v) => v.len(),
        }
    }
}

/// A column slice as runs: (rows, index into the chunk's dictionary, or `None` for nulls).
#[derive(Debug, PartialEq)]
struct Runs<'a> {
    runs: Vec<(usize, Option<u32>)>,
    dict: Dict<'a>,
    nulls: usize,
}

/// The (first element, rows) of each run of equal elements (nulls equal to nulls), element `i`
/// counting `rows(i)` rows; `None` as soon as there are more than `limit`.
fn bounds<T: PartialEq>(
    v: &[T],
    valid: Option<&NullBuffer>,
    limit: usize,
    rows: impl Fn(usize) -> usize,
) -> Option<Vec<(usize, usize)>> {
    let same = |a: usize, b: usize| match valid {
        None => v[a] == v[b],
        Some(n) => n.is_valid(a) == n.is_valid(b) && (n.is_null(a) || v[a] == v[b]),
    };
    let mut out = Vec::new();
    let (mut start, mut n) = (0, 0);
    for i in 0..=v.len() {
        if i == v.len() || (i > start && !same(start, i)) {
            if i > start {
                if out.len() == limit {
                    return None;
                }
                out.push((start, n));
            }
            (start, n) = (i, 0);
        }
        if i < v.len() {
            n += rows(i);
        }
    }
    Some(out)
}

/// The runs of `array` when it is a column this module writes and its runs are long enough.
/// The column may come as its rows, or run-end encoded (values of the column's type, each
/// standing for its run's rows: nothing is expanded).
fn runs(array: &ArrayRef) -> Option<Runs<'_>> {
    let limit = array.len() / MIN_MEAN_RUN;
    // The physical values, and the rows each stands for (one, unless run-end encoded).
    let (array, lengths): (&ArrayRef, Option<Vec<usize>>) = match array.data_type() {
        DataType::RunEndEncoded(ends, _) if *ends.data_type() == DataType::Int32 => {
            let r = array.as_run::<Int32Type>();
            let ends = r.run_ends();
            let (first, last) = (
                ends.get_start_physical_index(),
                ends.get_end_physical_index(),
            );
            // Only an unsliced array's values are its runs' values, one each.
            if first != 0 || last + 1 != r.values().len() {
                return None;
            }
            let mut at = 0usize;
            let lengths = ends
                .sliced_values()
                .map(|end| {
                    let n = end as usize - at;
                    at = end as usize;
                    n
                })
                .collect();
            (r.values(), Some(lengths))
        }
        _ => (array, None),
    };
    let rows = |i: usize| lengths.as_ref().map_or(1, |l| l[i]);
    let valid = array.nulls();
    let nulls = match (&lengths, valid) {
        (Some(l), Some(v)) => (0..l.len()).filter(|&i| v.is_null(i)).map(|i| l[i]).sum(),
        _ => array.null_count(),
    };
    let key = |at: usize| valid.is_none_or(|n| n.is_valid(at));
    match array.data_type() {
        DataType::Dictionary(k, v) if **k == DataType::Int32 && **v == DataType::Utf8 => {
            let d = array.as_dictionary::<Int32Type>();
            let values = d.values().as_string::<i32>();
            if values.null_count() > 0 {
                return None;
            }
            let keys = d.keys().values();
            let bounds = bounds(keys, valid, limit, rows)?;
            // The dictionary's keys renumbered by first appearance in this slice: a row group
            // carries only the values it uses, each once (an Arrow dictionary may hold a value
            // twice, as concatenated ones do; a parquet dictionary must not).
            let mut remap = vec![u32::MAX; values.len()];
            let mut used = Vec::new();
            let mut seen: std::collections::HashMap<&str, u32> = Default::default();
            let mut runs = Vec::with_capacity(bounds.len());
            for (at, n) in bounds {
                let k = key(at).then(|| {
                    let k = usize::try_from(keys[at])
                        .ok()
                        .filter(|&k| k < remap.len())?;
                    if remap[k] == u32::MAX {
                        let v = values.value(k);
                        remap[k] = *seen.entry(v).or_insert_with(|| {
                            used.push(v);
                            used.len() as u32 - 1
                        });
                    }
                    Some(remap[k])
                });
                match k {
                    Some(None) => return None,
                    Some(Some(k)) => runs.push((n, Some(k))),
                    None => runs.push((n, None)),
                }
            }
            Some(Runs {
                runs,
                dict: Dict::Text(used),
                nulls,
            })
        }
        DataType::Int64 => {
            let values = array.as_primitive::<Int64Type>().values();
            let bounds = bounds(values, valid, limit, rows)?;
            let mut index: std::collections::HashMap<i64, u32> = Default::default();
            let mut used = Vec::new();
            let runs = bounds
                .into_iter()
                .map(|(at, n)| {
                    let k = key(at).then(|| {
                        let v = values[at];
                        *index.entry(v).or_insert_with(|| {
                            used.push(v);
                            used.len() as u32 - 1
                        })
                    });
                    (n, k)
                })
                .collect();
            Some(Runs {
                runs,
                dict: Dict::Int(used),
                nulls,
            })
        }
        _ => None,
    }
}

/// The bits needed for values up to `max`.
fn bit_width(max: u64) -> u8 {
    (64 - max.leading_zeros()) as u8
}

/// Parquet's RLE/bit-packed hybrid encoding (definition levels, dictionary indices), fed runs: a
/// run of 8 or more is one RLE run, shorter ones are gathered into bit-packed groups of 8.
struct Hybrid {
    out: Vec<u8>,
    width: u8,
    literals: Vec<u32>,
}

impl Hybrid {
    /// At most this many groups of 8 per bit-packed run (its header then fits one byte, as
    /// other writers keep it).
    const MAX_GROUPS: usize = 63;

    fn new(width: u8) -> Hybrid {
        Hybrid {
            out: Vec::new(),
            width,
            literals: Vec::new(),
        }
    }

    fn put(&mut self, value: u32, mut n: usize) {
        // A started group of literals is completed first: a bit-packed run holds whole groups.
        let partial = self.literals.len() % 8;
        if partial != 0 {
            let take = n.min(8 - partial);
            self.literals.extend(std::iter::repeat_n(value, take));
            n -= take;
        }
        if n >= 8 {
            self.flush_literals();
            varint(&mut self.out, (n as u64) << 1);
            let bytes = usize::from(self.width).div_ceil(8);
            self.out
                .extend_from_slice(&u64::from(value).to_le_bytes()[..bytes]);
        } else {
            self.literals.extend(std::iter::repeat_n(value, n));
        }
    }

    /// The gathered literals as bit-packed runs (the last group padded with zeros, which only
    /// the end of the encoded values may be: a reader stops at the page's value count).
    fn flush_literals(&mut self) {
        let mut literals = std::mem::take(&mut self.literals);
        while !literals.len().is_multiple_of(8) {
            literals.push(0);
        }
        for run in literals.chunks(8 * Self::MAX_GROUPS) {
            varint(&mut self.out, ((run.len() / 8) as u64) << 1 | 1);
            let (mut acc, mut bits) = (0u64, 0u32);
            for &v in run {
                acc |= u64::from(v) << bits;
                bits += u32::from(self.width);
                while bits >= 8 {
                    self.out.push(acc as u8);
                    acc >>= 8;
                    bits -= 8;
                }
            }
        }
        literals.clear();
        self.literals = literals;
    }

    fn finish(mut self) -> Vec<u8> {
        self.flush_literals();
        self.out
    }
}

/// ULEB128.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A page's bytes compressed with the column's codec (`None`: a codec not written here).
fn compress(codec: Compression, raw: &[u8]) -> Option<Vec<u8>> {
    match codec {
        Compression::UNCOMPRESSED => Some(raw.to_vec()),
        Compression::SNAPPY => snap::raw::Encoder::new().compress_vec(raw).ok(),
        _ => None,
    }
}

/// The dictionary page's values, PLAIN encoded (text as length-prefixed bytes, ints as 8 bytes
/// little-endian).
fn plain_dictionary(dict: &Dict<'_>) -> Vec<u8> {
    let mut plain = Vec::new();
    match dict {
        Dict::Text(values) => {
            for v in values {
                plain.extend_from_slice(&(v.len() as u32).to_le_bytes());
                plain.extend_from_slice(v.as_bytes());
            }
        }
        Dict::Int(values) => {
            for v in values {
                plain.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    plain
}

/// How a chunk's data pages are laid out: the codec, the rows per page, the bit width of the
/// dictionary keys, and whether definition levels are written (a nullable column).
struct PageFormat {
    codec: Compression,
    per_page: usize,
    width: u8,
    nullable: bool,
}

/// What writing a chunk's pages leaves for its metadata: the pages' uncompressed size, the
/// first data page's offset and the offset index.
struct Pages {
    uncompressed: usize,
    first_data: Option<u64>,
    index: OffsetIndexBuilder,
}

/// The next `page_rows` rows of the runs as one data page, uncompressed: the definition levels
/// (when nullable), the key width, then the keys. A run longer than the page is cut, its rest
/// left in `carry` for the next page.
fn data_page(
    runs: &mut impl Iterator<Item = (usize, Option<u32>)>,
    carry: &mut Option<(usize, Option<u32>)>,
    page_rows: usize,
    format: &PageFormat,
) -> Result<Vec<u8>> {
    let mut levels = Hybrid::new(1);
    let mut keys = Hybrid::new(format.width);
    let mut left = page_rows;
    while left > 0 {
        let (n, key) = carry
            .take()
            .or_else(|| runs.next())
            .ok_or_else(|| ParquetError::General("runs shorter than the column".into()))?;
        let take = n.min(left);
        if take < n {
            *carry = Some((n - take, key));
        }
        levels.put(u32::from(key.is_some()), take);
        if let Some(k) = key {
            keys.put(k, take);
        }
        left -= take;
    }
    let mut raw = Vec::new();
    if format.nullable {
        let levels = levels.finish();
        raw.extend_from_slice(&(levels.len() as u32).to_le_bytes());
        raw.extend_from_slice(&levels);
    }
    raw.push(format.width);
    raw.extend_from_slice(&keys.finish());
    Ok(raw)
}

/// The chunk's pages written to `sink`: the dictionary page, then data pages of at most the
/// format's row count each, indexed as they go.
fn write_pages(
    sink: &mut TrackedWrite<Vec<u8>>,
    dict: &Dict<'_>,
    runs: Vec<(usize, Option<u32>)>,
    rows: usize,
    format: &PageFormat,
) -> Result<Pages> {
    let codec = format.codec;
    let plain = plain_dictionary(dict);
    let mut index = OffsetIndexBuilder::new();
    let (mut uncompressed, mut first_data) = (0usize, None);
    let mut pages = SerializedPageWriter::new(sink);
    let spec = pages.write_page(CompressedPage::new(
        Page::DictionaryPage {
            buf: compress(codec, &plain).expect("codec checked").into(),
            num_values: dict.distinct() as u32,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        },
        plain.len(),
    ))?;
    uncompressed += spec.uncompressed_size;
    let mut runs = runs.into_iter();
    let mut carry: Option<(usize, Option<u32>)> = None;
    let mut row = 0usize;
    while row < rows {
        let page_rows = format.per_page.min(rows - row);
        let raw = data_page(&mut runs, &mut carry, page_rows, format)?;
        let spec = pages.write_page(CompressedPage::new(
            Page::DataPage {
                buf: compress(codec, &raw).expect("codec checked").into(),
                num_values: page_rows as u32,
                encoding: Encoding::RLE_DICTIONARY,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            },
            raw.len(),
        ))?;
        uncompressed += spec.uncompressed_size;
        first_data.get_or_insert(spec.offset);
        index.append_offset_and_size(spec.offset as i64, spec.bytes_written as i32);
        index.append_row_count(page_rows as i64);
        row += page_rows;
    }
    Ok(Pages {
        uncompressed,
        first_data,
        index,
    })
}

/// The chunk's statistics: the smallest and largest of its distinct values, and its nulls.
fn statistics(dict: &Dict<'_>, nulls: usize) -> Statistics {
    let nulls = Some(nulls as u64);
    match dict {
        Dict::Int(v) => Statistics::int64(
            v.iter().min().copied(),
            v.iter().max().copied(),
            None,
            nulls,
            false,
        ),
        Dict::Text(v) => {
            let bytes = |s: Option<&&str>| s.map(|s| ByteArray::from(s.as_bytes().to_vec()));
            Statistics::byte_array(
                bytes(v.iter().min()),
                bytes(v.iter().max()),
                None,
                nulls,
                false,
            )
        }
    }
}

/// The column chunk of `array` (one row group's slice of one column, as its rows or run-end
/// encoded) encoded from its runs, with the metadata a row group writer appends it by; `None`
/// when the column is not one this module writes (its type, its codec, or runs shorter than
/// [`MIN_MEAN_RUN`] rows on average).
pub fn chunk(
    array: &ArrayRef,
    descr: ColumnDescPtr,
    props: &WriterProperties,
) -> Result<Option<(Bytes, ColumnCloseResult)>> {
    let path = descr.path().clone();
    let codec = props.compression(&path);
    if compress(codec, &[]).is_none() || descr.max_rep_level() > 0 {
        return Ok(None);
    }
    let Some(Runs { runs, dict, nulls }) = runs(array) else {
        return Ok(None);
    };
    let rows = array.len();
    let format = PageFormat {
        codec,
        per_page: props.data_page_row_count_limit().max(1),
        width: bit_width(dict.distinct().saturating_sub(1) as u64),
        nullable: descr.max_def_level() > 0,
    };
    let mut sink = TrackedWrite::new(Vec::new());
    let pages = write_pages(&mut sink, &dict, runs, rows, &format)?;
    let written = sink.bytes_written();
    let bytes = Bytes::from(sink.into_inner()?);
    let mut meta = ColumnChunkMetaData::builder(descr.clone())
        .set_compression(codec)
        .set_encodings(vec![
            Encoding::PLAIN,
            Encoding::RLE,
            Encoding::RLE_DICTIONARY,
        ])
        .set_num_values(rows as i64)
        .set_total_compressed_size(written as i64)
        .set_total_uncompressed_size(pages.uncompressed as i64)
        .set_dictionary_page_offset(Some(0))
        .set_data_page_offset(pages.first_data.unwrap_or(0) as i64);
    if props.statistics_enabled(&path) != EnabledStatistics::None {
        meta = meta.set_statistics(statistics(&dict, nulls));
    }
    let close = ColumnCloseResult {
        bytes_written: written as u64,
        rows_written: rows as u64,
        metadata: meta.build()?,
        bloom_filter: None,
        column_index: None,
        offset_index: Some(pages.index.build()),
    };
    Ok(Some((bytes, close)))
}

/// Whether [`chunk`] could take a column of this type (a cheap test before slicing).
pub fn may_take(dt: &DataType) -> bool {
    matches!(dt, DataType::Int64)
        || matches!(dt, DataType::Dictionary(k, v) if **k == DataType::Int32 && **v == DataType::Utf8)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{DictionaryArray, Int32Array, Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::{Field, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use super::*;
    use crate::arrow_conv::{dictionary_texts, parquet_properties, write_parquet_parallel};

    /// A text column and an int column of the given runs ((value, rows); `None` a null), written
    /// in row groups of `group` rows and pages of `page` rows, read back by parquet's reader.
    fn round_trip(
        runs: &[(Option<i64>, usize)],
        group: usize,
        page: usize,
    ) -> (RecordBatch, RecordBatch) {
        let values: Vec<Option<i64>> = runs
            .iter()
            .flat_map(|&(v, n)| std::iter::repeat_n(v, n))
            .collect();
        let names: Vec<String> = (0..64).map(|i| format!("value-{i:02}")).collect();
        // Keys into a dictionary with unused entries, in an order that is not first appearance.
        let keys: Int32Array = values.iter().map(|v| v.map(|v| (63 - v) as i32)).collect();
        let text = DictionaryArray::<Int32Type>::try_new(keys, Arc::new(StringArray::from(names)))
            .unwrap();
        let ints: Int64Array = values
            .iter()
            .map(|v| v.map(|v| v * 1_000_000_007))
            .collect();
        let nullable = values.iter().any(Option::is_none);
        let schema = Arc::new(Schema::new(vec![
            Field::new("t", text.data_type().clone(), nullable),
            Field::new("i", DataType::Int64, nullable),
        ]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(text), Arc::new(ints)]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");

        let props = parquet_properties()
            .set_max_row_group_row_count(Some(group))
            .set_data_page_row_count_limit(page)
            .build();
        write_parquet_parallel(&path, &batch, props).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .with_batch_size(1 << 20)
            .build()
            .unwrap();
        let read: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
        let read = arrow::compute::concat_batches(&read[0].schema(), &read).unwrap();
        (batch, read)
    }

    fn assert_same(runs: &[(Option<i64>, usize)], group: usize, page: usize) {
        let (wrote, read) = round_trip(runs, group, page);
        assert_eq!(read.num_rows(), wrote.num_rows());
        let text = |b: &RecordBatch| dictionary_texts(b.column(0));
        assert_eq!(text(&read), text(&wrote), "text column of {runs:?}");
        assert_eq!(
            read.column(1).as_ref(),
            wrote.column(1).as_ref(),
            "int column of {runs:?}"
        );
    }

    #[test]
    fn long_runs_read_back_as_written() {
        // One value; two values; nulls among runs; a run across pages and row groups.
        assert_same(&[(Some(5), 100)], 1000, 1000);
        assert_same(&[(Some(5), 5000)], 10000, 1000);
        assert_same(&[(Some(5), 2000), (Some(6), 3000)], 10000, 1000);
        assert_same(&[(Some(5), 40), (Some(7), 60)], 1000, 1000);
        assert_same(
            &[(Some(1), 30), (None, 50), (Some(2), 20), (None, 9)],
            1000,
            1000,
        );
        assert_same(
            &[(Some(1), 3000), (Some(2), 2500), (Some(1), 10)],
            1000,
            700,
        );
    }

    #[test]
    fn short_runs_among_long_ones_are_bit_packed() {
        // Mean run above the threshold, but with stretches of single values (bit-packed
        // literals, groups completed by the next run, and a padded last group).
        let mut runs = Vec::new();
        for i in 0..40 {
            runs.push((Some(i % 17), 1));
            runs.push((Some((i * 7) % 33), 2));
            runs.push((Some(i % 5), 30));
            if i % 9 == 0 {
                runs.push((None, 3));
            }
        }
        runs.push((Some(60), 5));
        assert_same(&runs, 100_000, 100_000);
        assert_same(&runs, 500, 77);
    }

    #[test]
    fn a_value_twice_in_the_arrow_dictionary_is_once_in_the_chunk() {
        // Concatenated Arrow dictionaries repeat values; parquet readers (Arrow C++) take a
        // dictionary page's values as distinct.
        let keys = Int32Array::from_iter_values((0..400).map(|i| i / 100));
        let values = StringArray::from(vec!["gpu", "soc", "gpu", "soc"]);
        let a: ArrayRef = Arc::new(DictionaryArray::try_new(keys, Arc::new(values)).unwrap());
        let r = runs(&a).unwrap();
        assert!(matches!(&r.dict, Dict::Text(v) if *v == ["gpu", "soc"]));
        assert_eq!(
            r.runs,
            [
                (100, Some(0)),
                (100, Some(1)),
                (100, Some(0)),
                (100, Some(1))
            ]
        );
    }

    /// The same runs, as rows and run-end encoded (one element per given run, so that equal
    /// neighbours must be joined), are the same runs.
    #[test]
    fn run_end_encoded_columns_are_the_runs_of_their_rows() {
        use arrow::array::RunArray;
        let cases: [&[(Option<i64>, usize)]; 4] = [
            &[(Some(5), 100)],
            &[
                (Some(1), 30),
                (None, 50),
                (None, 5),
                (Some(2), 20),
                (Some(2), 9),
            ],
            &[(Some(3), 40), (Some(1), 1), (Some(3), 40), (Some(1), 16)],
            &[(None, 64)],
        ];
        for given in cases {
            let names = StringArray::from_iter_values((0..8).map(|i| format!("v{i}")));
            let names: ArrayRef = Arc::new(names);
            let text = |v: &mut dyn Iterator<Item = Option<i64>>| -> ArrayRef {
                let keys: Int32Array = v.map(|v| v.map(|v| v as i32)).collect();
                Arc::new(DictionaryArray::try_new(keys, names.clone()).unwrap())
            };
            let int = |v: &mut dyn Iterator<Item = Option<i64>>| -> ArrayRef {
                Arc::new(v.collect::<Int64Array>())
            };
            let rows = || given.iter().flat_map(|&(v, n)| std::iter::repeat_n(v, n));
            let ends = Int32Array::from_iter_values(given.iter().scan(0, |at, &(_, n)| {
                *at += n as i32;
                Some(*at)
            }));
            for make in [
                &text as &dyn Fn(&mut dyn Iterator<Item = Option<i64>>) -> ArrayRef,
                &int,
            ] {
                let expanded = make(&mut rows());
                let values = make(&mut given.iter().map(|&(v, _)| v));
                let ree: ArrayRef = Arc::new(RunArray::try_new(&ends, values.as_ref()).unwrap());
                assert_eq!(ree.len(), expanded.len());
                assert_eq!(
                    runs(&ree),
                    runs(&expanded),
                    "{given:?} as {}",
                    expanded.data_type()
                );
                assert!(runs(&ree).is_some());
            }
        }
    }

    #[test]
    fn columns_of_short_runs_are_left_to_the_arrow_writer() {
        let a: ArrayRef = Arc::new(Int64Array::from_iter_values(0..1000));
        assert!(runs(&a).is_none());
        let b: ArrayRef = Arc::new(Int64Array::from_iter_values((0..1000).map(|i| i / 8)));
        assert_eq!(runs(&b).map(|r| r.runs.len()), Some(125));
        let c: ArrayRef = Arc::new(Int64Array::from_iter_values((0..1000).map(|i| i / 7)));
        assert!(runs(&c).is_none());
    }

    #[test]
    fn hybrid_encoding_of_known_values() {
        // A run of 8 or more: RLE header (n << 1) and the value in ceil(width / 8) bytes.
        let mut h = Hybrid::new(3);
        h.put(5, 10);
        assert_eq!(h.finish(), vec![20, 5]);
        // Fewer than 8: one bit-packed group, LSB first, padded with zeros.
        let mut h = Hybrid::new(3);
        h.put(1, 1);
        h.put(2, 1);
        h.put(7, 2);
        // 1 | 2 << 3 | 7 << 6 | 7 << 9 = 0b1111_1101_0001
        assert_eq!(h.finish(), vec![0b11, 0b1101_0001, 0b1111, 0]);
        // A long run completes the started group first.
        let mut h = Hybrid::new(1);
        h.put(1, 3);
        h.put(0, 13);
        assert_eq!(h.finish(), vec![0b11, 0b0000_0111, 16, 0]);
    }
}
