//! `RunTable`: one domain's runs in memory, normalised to the published schema, with a
//! `run_id` column in front, rows in the default order, and an id index.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use super::domain::Domain;
use super::error::EngineError;
use super::fields::{self, FieldSpec, FieldType, RUN_ID};
use super::frame::{ColumnData, Frame, FrameColumn, Value};
use super::models::fit_memo::SweepMemo;
use super::runid::{self, DiffusionKey, LlmKey};

/// One domain's runs. Column 0 is `run_id`; then the published fields in order, then the derived ones.
#[derive(Debug)]
pub struct RunTable {
    pub domain: Domain,
    /// `run_id`, the published fields, then the derived ones (`fields::derived_fields`).
    pub fields: Vec<FieldSpec>,
    pub frame: Frame,
    index: HashMap<Arc<str>, usize>,
    by_name: HashMap<&'static str, usize>,
    /// Sweep fits already made over these rows (`models::sweep`).
    pub(crate) sweep_memo: SweepMemo,
}

/// Compare two cells for sorting: nulls after every value; floats by total order.
pub fn cmp_values(a: Value<'_>, b: Value<'_>) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Greater,
        (_, Value::Null) => Ordering::Less,
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        (Value::Int(x), Value::Int(y)) => x.cmp(&y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(&y),
        (x, y) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => Ordering::Equal,
        },
    }
}

impl RunTable {
    /// Build from the published columns (in `fields::published_fields(domain)` order): computes
    /// run ids, sorts into the default order and indexes the ids.
    pub fn from_published(domain: Domain, published: Vec<ColumnData>) -> Result<Self, EngineError> {
        let specs = fields::published_fields(domain);
        assert_eq!(
            specs.len(),
            published.len(),
            "one column per published field"
        );
        let n = published.first().map_or(0, ColumnData::len);
        let raw = Frame {
            columns: specs
                .iter()
                .zip(published)
                .map(|(s, data)| FrameColumn {
                    name: s.name.to_string(),
                    data,
                })
                .collect(),
        };
        let col = |name: &str| raw.column(name).map(|c| &c.data);
        let str_at = |name: &str, row: usize| match col(name).map(|c| c.get(row)) {
            Some(Value::Str(s)) => s,
            _ => "_",
        };
        let int_at = |name: &str, row: usize| match col(name).map(|c| c.get(row)) {
            Some(Value::Int(v)) => Some(v),
            _ => None,
        };
        let base_ids: Vec<String> = (0..n)
            .map(|r| match domain {
                Domain::Llm => runid::llm_run_id(&LlmKey {
                    task: str_at("task", r),
                    model_id: str_at("model_id", r),
                    gpu_model: str_at("gpu_model", r),
                    num_gpus: int_at("num_gpus", r),
                    max_num_seqs: int_at("max_num_seqs", r),
                    num_request_repeats: int_at("num_request_repeats", r),
                    seed: int_at("seed", r),
                }),
                Domain::Diffusion => runid::diffusion_run_id(&DiffusionKey {
                    task: str_at("task", r),
                    model_id: str_at("model_id", r),
                    gpu_model: str_at("gpu_model", r),
                    num_gpus: int_at("num_gpus", r),
                    batch_size: int_at("batch_size", r),
                    height: int_at("height", r),
                    width: int_at("width", r),
                    inference_steps: int_at("inference_steps", r),
                    ulysses_degree: int_at("ulysses_degree", r),
                    ring_degree: int_at("ring_degree", r),
                    use_torch_compile: match col("use_torch_compile").map(|c| c.get(r)) {
                        Some(Value::Bool(b)) => Some(b),
                        _ => None,
                    },
                }),
            })
            .collect();

        // Default order: the toolkit's sort keys, then the run id, then the results path, then
        // the file order (only exact duplicates are left to it).
        let key_cols: Vec<&ColumnData> = fields::default_sort_keys(domain)
            .iter()
            .filter_map(|k| col(k))
            .collect();
        let path_col = col("results_path");
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| {
            for c in &key_cols {
                let o = cmp_values(c.get(a), c.get(b));
                if o != Ordering::Equal {
                    return o;
                }
            }
            base_ids[a]
                .cmp(&base_ids[b])
                .then_with(|| match path_col {
                    Some(p) => cmp_values(p.get(a), p.get(b)),
                    None => Ordering::Equal,
                })
                .then(a.cmp(&b))
        });

        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut ids: Vec<Option<Arc<str>>> = Vec::with_capacity(n);
        for &r in &order {
            let count = seen.entry(base_ids[r].as_str()).or_insert(0);
            *count += 1;
            ids.push(Some(if *count == 1 {
                Arc::from(base_ids[r].as_str())
            } else {
                Arc::from(format!("{}~{}", base_ids[r], count).as_str())
            }));
        }
        let all: Vec<usize> = (0..raw.columns.len()).collect();
        let mut frame = raw.select(&order, &all);
        frame.columns.insert(
            0,
            FrameColumn {
                name: RUN_ID.name.to_string(),
                data: ColumnData::Str(ids),
            },
        );

        // Derived columns after the published ones: the energy rating.
        let stars = crate::rating::ratings(domain, &frame)
            .into_iter()
            .map(|r| r.map(|r| r.stars))
            .collect();
        frame.columns.push(FrameColumn {
            name: fields::ENERGY_RATING.name.to_string(),
            data: ColumnData::Int(stars),
        });
        let mut table_fields = vec![RUN_ID];
        table_fields.extend_from_slice(specs);
        table_fields.extend_from_slice(fields::derived_fields(domain));
        Ok(Self::assemble(domain, table_fields, frame))
    }

    fn assemble(domain: Domain, fields: Vec<FieldSpec>, frame: Frame) -> Self {
        let mut index = HashMap::with_capacity(frame.num_rows());
        if let Some(ColumnData::Str(ids)) = frame.columns.first().map(|c| &c.data) {
            for (i, id) in ids.iter().enumerate() {
                if let Some(id) = id {
                    index.insert(id.clone(), i);
                }
            }
        }
        let by_name = fields
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name, i))
            .collect();
        RunTable {
            domain,
            fields,
            frame,
            index,
            by_name,
            sweep_memo: SweepMemo::default(),
        }
    }

    /// The published columns alone (no `run_id`, no derived column), as a dataset stores them.
    pub fn published_frame(&self) -> Frame {
        let n = fields::published_fields(self.domain).len();
        Frame {
            columns: self.frame.columns[1..=n].to_vec(),
        }
    }

    pub fn len(&self) -> usize {
        self.frame.num_rows()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Column position of a field (0 is `run_id`).
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Column position of a field, or `UnknownField` listing every field.
    pub fn require_field(&self, name: &str) -> Result<usize, EngineError> {
        self.field_index(name)
            .ok_or_else(|| EngineError::UnknownField {
                domain: self.domain,
                name: name.to_string(),
                allowed: self.field_names(),
            })
    }

    /// Column position of a numeric field, or an error listing the numeric fields.
    pub fn require_numeric(&self, name: &str) -> Result<usize, EngineError> {
        let i = self.require_field(name)?;
        if self.fields[i].ty.is_numeric() {
            Ok(i)
        } else {
            Err(EngineError::NotNumeric {
                name: name.to_string(),
                allowed: self.numeric_field_names(),
            })
        }
    }

    pub fn field_names(&self) -> Vec<String> {
        self.fields.iter().map(|f| f.name.to_string()).collect()
    }

    pub fn numeric_field_names(&self) -> Vec<String> {
        self.fields
            .iter()
            .filter(|f| f.ty.is_numeric())
            .map(|f| f.name.to_string())
            .collect()
    }

    pub fn column(&self, i: usize) -> &ColumnData {
        &self.frame.columns[i].data
    }

    /// The run id of a row.
    pub fn run_id(&self, row: usize) -> &str {
        match self.column(0).get(row) {
            Value::Str(s) => s,
            _ => "",
        }
    }

    /// Row of a run id.
    pub fn row_of(&self, run_id: &str) -> Option<usize> {
        self.index.get(run_id).copied()
    }

    /// Count of rows with `is_stable` true and false (LLM); `(len, 0)` for diffusion.
    pub fn stability_counts(&self) -> (usize, usize) {
        match self.field_index("is_stable").map(|i| self.column(i)) {
            Some(ColumnData::Bool(v)) => {
                let stable = v.iter().filter(|b| **b == Some(true)).count();
                (stable, v.len() - stable)
            }
            _ => (self.len(), 0),
        }
    }

    /// Whether a field may hold nulls (for Arrow schemas).
    pub fn is_nullable(&self, name: &str) -> bool {
        self.field_index(name)
            .is_none_or(|i| self.fields[i].nullable)
    }

    /// The field type of a column.
    pub fn field_type(&self, i: usize) -> FieldType {
        self.fields[i].ty
    }
}
