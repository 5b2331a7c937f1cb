//! The JSON text of every cell of a run table, written once per snapshot: a cell's text depends on
//! the snapshot alone, and a fresh `/runs` answer was mostly the same numbers formatted and the same
//! strings escaped again (ryu and string escaping were a large part of its time). A page of runs is
//! then the chosen rows' cells copied behind their pre-written keys, byte for byte what
//! [`json_array`](super::json_array) writes for the same rows and columns. A page of every column
//! (a `/runs` query without `fields`) copies each row's whole object, written on its first use:
//! one copy a row instead of two for each of its cells, which had been a noticeable part of a
//! fresh run query's time.

use std::sync::{Arc, Mutex, PoisonError};

use super::frames::{json_cell_of, json_str};
use crate::engine::frame::Frame;
use crate::engine::{Domain, RunTable};

/// One table's cells as JSON text.
pub struct TableJson {
    /// `"name":` of each column.
    keys: Vec<Box<[u8]>>,
    columns: Vec<Cells>,
    /// `{...}` of each row, every column in order.
    rows: std::sync::OnceLock<Cells>,
}

/// A column's cells back to back; cell `r` ends at `ends[r]`.
struct Cells {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Cells {
    fn get(&self, row: usize) -> &[u8] {
        let start = if row == 0 { 0 } else { self.ends[row - 1] };
        &self.bytes[start..self.ends[row]]
    }
}

impl TableJson {
    pub fn of(table: &RunTable) -> TableJson {
        Self::of_frame(&table.frame)
    }

    fn of_frame(frame: &Frame) -> TableJson {
        let rows = frame.num_rows();
        let keys = frame
            .columns
            .iter()
            .map(|c| {
                let mut key = Vec::with_capacity(c.name.len() + 3);
                json_str(&mut key, &c.name);
                key.push(b':');
                key.into_boxed_slice()
            })
            .collect();
        let columns = frame
            .columns
            .iter()
            .map(|c| {
                let mut cells = Cells {
                    bytes: Vec::with_capacity(rows * 8),
                    ends: Vec::with_capacity(rows),
                };
                for r in 0..rows {
                    json_cell_of(&mut cells.bytes, c, r);
                    cells.ends.push(cells.bytes.len());
                }
                cells.bytes.shrink_to_fit();
                cells
            })
            .collect();
        TableJson {
            keys,
            columns,
            rows: std::sync::OnceLock::new(),
        }
    }

    /// Each row's object, every column in order.
    fn whole_rows(&self) -> &Cells {
        self.rows.get_or_init(|| {
            let n = self.columns.first().map_or(0, |c| c.ends.len());
            let size = self.columns.iter().map(|c| c.bytes.len()).sum::<usize>()
                + n * (self.keys.iter().map(|k| k.len() + 1).sum::<usize>() + 1);
            let mut rows = Cells {
                bytes: Vec::with_capacity(size),
                ends: Vec::with_capacity(n),
            };
            let every: Vec<usize> = (0..self.columns.len()).collect();
            for r in 0..n {
                self.write_object(&mut rows.bytes, r, &every);
                rows.ends.push(rows.bytes.len());
            }
            rows
        })
    }

    /// `{...}`: row `r` with the columns, in order.
    fn write_object(&self, out: &mut Vec<u8>, r: usize, columns: &[usize]) {
        out.push(b'{');
        for (j, &c) in columns.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&self.keys[c]);
            out.extend_from_slice(self.columns[c].get(r));
        }
        out.push(b'}');
    }

    /// `[{...},...]`: the rows (positions in the table) with the columns (positions), in order.
    /// No columns is no rows, as a frame without columns has none.
    pub fn write_array(&self, out: &mut Vec<u8>, rows: &[usize], columns: &[usize]) {
        out.push(b'[');
        let rows = if columns.is_empty() { &[][..] } else { rows };
        let every =
            columns.len() == self.columns.len() && columns.iter().enumerate().all(|(i, &c)| i == c);
        let whole = (every && !rows.is_empty()).then(|| self.whole_rows());
        for (i, &r) in rows.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match whole {
                Some(objects) => out.extend_from_slice(objects.get(r)),
                None => self.write_object(out, r, columns),
            }
        }
        out.push(b']');
    }
}

/// The current snapshot's [`TableJson`] of each domain, written on first use; a new snapshot
/// replaces them.
#[derive(Default)]
pub struct TableJsonCache {
    current: Mutex<Option<(u64, [Option<Arc<TableJson>>; 2])>>,
}

impl TableJsonCache {
    /// The cells of `table`, the `domain` table of the snapshot numbered `generation`.
    pub fn get(&self, generation: u64, domain: Domain, table: &RunTable) -> Arc<TableJson> {
        let slot = match domain {
            Domain::Llm => 0,
            Domain::Diffusion => 1,
        };
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if current.as_ref().is_none_or(|(g, _)| *g != generation) {
            *current = Some((generation, [None, None]));
        }
        let tables = &mut current.as_mut().expect("set above").1;
        tables[slot]
            .get_or_insert_with(|| Arc::new(TableJson::of(table)))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::super::json_array;
    use super::*;
    use crate::engine::frame::{ColumnData, FrameColumn};

    fn col(name: &str, data: ColumnData) -> FrameColumn {
        FrameColumn {
            name: name.into(),
            data,
        }
    }

    /// The pre-written cells give the bytes the frame encoder gives, for any rows and columns:
    /// escapes, nulls, non-finite floats, JSON text and structs.
    #[test]
    fn pages_are_what_the_frame_encoder_writes() {
        let frame = Frame {
            columns: vec![
                col(
                    "s\"x",
                    ColumnData::Str(vec![Some("a\u{1}<\"é\\".into()), None, Some("".into())]),
                ),
                col(
                    "f",
                    ColumnData::Float(vec![Some(0.1), Some(f64::NAN), Some(-1e300)]),
                ),
                col("i", ColumnData::Int(vec![Some(i64::MIN), None, Some(7)])),
                col("b", ColumnData::Bool(vec![None, Some(true), Some(false)])),
                col(
                    "j",
                    ColumnData::Json(vec![Some("[1,2]".into()), None, Some("{}".into())]),
                ),
                col(
                    "st",
                    ColumnData::Struct {
                        fields: vec![col(
                            "x",
                            ColumnData::Float(vec![Some(2.5), None, Some(1.0)]),
                        )],
                        valid: vec![true, false, true],
                    },
                ),
            ],
        };
        let cells = TableJson::of_frame(&frame);
        let everything: Vec<usize> = (0..frame.columns.len()).collect();
        for (rows, columns) in [
            (vec![0, 1, 2], everything.clone()),
            (vec![2, 0, 2], everything.clone()),
            (vec![1, 2], vec![0, 1, 2, 3, 5, 4]),
            (vec![2, 0], vec![5, 0, 3]),
            (vec![1], vec![1]),
            (vec![], everything.clone()),
            (vec![0, 0], vec![]),
        ] {
            let mut want = Vec::new();
            json_array(&mut want, &frame.select(&rows, &columns));
            let mut got = Vec::new();
            cells.write_array(&mut got, &rows, &columns);
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(want).unwrap()
            );
        }
        let mut page = Vec::new();
        cells.write_array(&mut page, &[0], &[0, 1]);
        assert_eq!(
            String::from_utf8(page).unwrap(),
            r#"[{"s\"x":"a\u0001<\"é\\","f":0.1}]"#
        );
    }
}
