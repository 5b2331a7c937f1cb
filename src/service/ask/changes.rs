//! What changed between two revisions of the dataset: the filtered runs of each matched by
//! `run_id`, those added, removed and changed (each changed published field with its old value,
//! new value and relative change), a summary (counts per task and GPU model, the largest moves), and per
//! task the models' order by their least energy before and after.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value as Json, json};

use crate::engine::RunTable;
use crate::engine::fields::published_fields;
use crate::engine::frame::{ColumnData, Frame, FrameColumn, Value};
use crate::engine::frontier::default_energy;
use crate::pycompat::repr::python_float_repr;
use crate::service::{ServiceError, Snapshot};

use super::answer::{Answer, Nullable, Rows, Shape};
use super::request::Request;

/// Changes the summary lists as the largest moves.
const LARGEST_MOVES: usize = 10;

/// A field of a run that differs.
struct FieldChange<'a> {
    field: &'static str,
    old: Value<'a>,
    new: Value<'a>,
    relative: Option<f64>,
}

/// The runs of one revision the filters select, by id.
struct Side<'a> {
    table: &'a RunTable,
    rows: Vec<usize>,
    by_id: HashMap<&'a str, usize>,
}

impl<'a> Side<'a> {
    fn of(req: &Request, snapshot: &'a Snapshot) -> Result<Side<'a>, ServiceError> {
        let table = snapshot.table(req.domain);
        let q = req.params.run_filters(req.domain)?;
        let rows = table.filter_rows(&q.filters, q.stability)?;
        let by_id = rows.iter().map(|&r| (table.run_id(r), r)).collect();
        Ok(Side { table, rows, by_id })
    }

    /// A run's value of `field` (null when this revision has no such field).
    fn get(&self, row: usize, field: &str) -> Value<'a> {
        match self.table.field_index(field) {
            Some(c) => self.table.column(c).get(row),
            None => Value::Null,
        }
    }

    /// A run's text field (`task`, `gpu_model`).
    fn text(&self, row: usize, field: &str) -> String {
        match self.get(row, field) {
            Value::Str(s) => s.to_string(),
            _ => String::new(),
        }
    }
}

/// Whether two cells hold the same value (two nulls, or two NaNs, are the same).
fn same(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::Int(x), Value::Float(y)) | (Value::Float(y), Value::Int(x)) => x as f64 == y,
        _ => a == b,
    }
}

/// `(new - old) / |old|`, for two numbers with `old` not zero.
fn relative(old: Value, new: Value) -> Option<f64> {
    let (o, n) = (old.as_f64()?, new.as_f64()?);
    (o != 0.0 && o.is_finite() && n.is_finite()).then(|| (n - o) / o.abs())
}

fn cell(v: Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Str(s) => json!(s),
        Value::Int(i) => json!(i),
        Value::Float(x) => json!(x),
        Value::Bool(b) => json!(b),
    }
}

/// A cell as text for the tabular formats (floats as Python writes them).
fn text(v: Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Str(s) => Some(s.to_string()),
        Value::Int(i) => Some(i.to_string()),
        Value::Float(x) => Some(python_float_repr(x)),
        Value::Bool(b) => Some(if b { "True" } else { "False" }.to_string()),
    }
}

/// The changes from `from` to `to` of the runs the request's filters select.
pub(super) fn answer(
    req: &Request,
    from: &Snapshot,
    to: &Snapshot,
) -> Result<Answer, ServiceError> {
    let (old, new) = (Side::of(req, from)?, Side::of(req, to)?);
    let added: Vec<usize> = new
        .rows
        .iter()
        .copied()
        .filter(|&r| !old.by_id.contains_key(new.table.run_id(r)))
        .collect();
    let removed: Vec<usize> = old
        .rows
        .iter()
        .copied()
        .filter(|&r| !new.by_id.contains_key(old.table.run_id(r)))
        .collect();
    let mut changed: Vec<(usize, Vec<FieldChange>)> = Vec::new();
    for &r in &new.rows {
        let Some(&o) = old.by_id.get(new.table.run_id(r)) else {
            continue;
        };
        // The published fields: a derived one (a rating relative to other runs) moves with them.
        let fields: Vec<FieldChange> = published_fields(req.domain)
            .iter()
            .filter_map(|f| {
                let (a, b) = (old.get(o, f.name), new.get(r, f.name));
                (!same(a, b)).then(|| FieldChange {
                    field: f.name,
                    old: a,
                    new: b,
                    relative: relative(a, b),
                })
            })
            .collect();
        if !fields.is_empty() {
            changed.push((r, fields));
        }
    }

    // Counts per task and per GPU model.
    let mut by: [BTreeMap<String, [usize; 3]>; 2] = Default::default();
    for (side, rows, kind) in [(&new, &added, 0), (&old, &removed, 1)] {
        for &r in rows {
            for (i, field) in ["task", "gpu_model"].into_iter().enumerate() {
                by[i].entry(side.text(r, field)).or_default()[kind] += 1;
            }
        }
    }
    for (r, _) in &changed {
        for (i, field) in ["task", "gpu_model"].into_iter().enumerate() {
            by[i].entry(new.text(*r, field)).or_default()[2] += 1;
        }
    }
    let counts = |name: &str, map: &BTreeMap<String, [usize; 3]>| -> Vec<Json> {
        map.iter()
            .map(|(k, [a, r, c])| json!({name: k, "added": a, "removed": r, "changed": c}))
            .collect()
    };
    let mut moves: Vec<(&str, &FieldChange)> = changed
        .iter()
        .flat_map(|(r, fs)| fs.iter().map(move |f| (new.table.run_id(*r), f)))
        .filter(|(_, f)| f.relative.is_some())
        .collect();
    moves.sort_by(|a, b| {
        let m = |f: &FieldChange| f.relative.map_or(0.0, f64::abs);
        m(b.1).total_cmp(&m(a.1))
    });
    let change_json = |f: &FieldChange| json!({"field": f.field, "old": cell(f.old), "new": cell(f.new), "relative_change": f.relative});
    let document = json!({
        "domain": req.domain.as_str(),
        "from": from.identity(),
        "to": to.identity(),
        "summary": {
            "added": added.len(),
            "removed": removed.len(),
            "changed": changed.len(),
            "by_task": counts("task", &by[0]),
            "by_gpu": counts("gpu_model", &by[1]),
            "largest_moves": moves.iter().take(LARGEST_MOVES).map(|(id, f)| {
                let mut m = change_json(f);
                m["run_id"] = json!(id);
                m
            }).collect::<Vec<_>>(),
        },
        "ranks": ranks(req, &old, &new),
        "added": added.iter().map(|&r| new.table.run_id(r)).collect::<Vec<_>>(),
        "removed": removed.iter().map(|&r| old.table.run_id(r)).collect::<Vec<_>>(),
        "changed": changed.iter().map(|(r, fs)| json!({
            "run_id": new.table.run_id(*r),
            "fields": fs.iter().map(change_json).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    let rows = frame(&old, &new, &added, &removed, &changed);
    Ok(Answer {
        shape: Shape::Document(document),
        total: Some(rows.num_rows()),
        rows: Rows::Frame(rows),
        nullable: Nullable::All,
        next: None,
        warnings: Vec::new(),
    })
}

/// Per task, each model's rank by its least energy (the domain's energy field; 1 is the least)
/// before and after, and how far it moved (up is positive).
fn ranks(req: &Request, old: &Side, new: &Side) -> Vec<Json> {
    let energy = default_energy(req.domain);
    let order = |side: &Side| -> BTreeMap<String, HashMap<String, usize>> {
        let mut least: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
        for &r in &side.rows {
            let Some(e) = side.get(r, energy).as_f64().filter(|e| !e.is_nan()) else {
                continue;
            };
            let slot = least
                .entry(side.text(r, "task"))
                .or_default()
                .entry(side.text(r, "model_id"))
                .or_insert(e);
            *slot = slot.min(e);
        }
        least
            .into_iter()
            .map(|(task, models)| {
                let mut by: Vec<(String, f64)> = models.into_iter().collect();
                by.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
                let ranks = by
                    .into_iter()
                    .enumerate()
                    .map(|(i, (m, _))| (m, i + 1))
                    .collect();
                (task, ranks)
            })
            .collect()
    };
    let (before, after) = (order(old), order(new));
    let mut tasks: Vec<&String> = before.keys().chain(after.keys()).collect();
    tasks.sort();
    tasks.dedup();
    let mut out = Vec::new();
    let none = HashMap::new();
    for task in tasks {
        let (b, a) = (
            before.get(task).unwrap_or(&none),
            after.get(task).unwrap_or(&none),
        );
        let mut models: Vec<&String> = b.keys().chain(a.keys()).collect();
        models.sort_by_key(|m| {
            (
                a.get(*m).copied().unwrap_or(usize::MAX),
                b.get(*m).copied(),
                *m,
            )
        });
        models.dedup();
        for m in models {
            let (rb, ra) = (b.get(m).copied(), a.get(m).copied());
            let moved = rb.zip(ra).map(|(x, y)| x as i64 - y as i64);
            out.push(
                json!({"task": task, "model_id": m, "before": rb, "after": ra, "moved": moved}),
            );
        }
    }
    out
}

/// One row per change: added and removed runs, and each changed field.
fn frame(
    old: &Side,
    new: &Side,
    added: &[usize],
    removed: &[usize],
    changed: &[(usize, Vec<FieldChange>)],
) -> Frame {
    let mut rows: Vec<[Option<String>; 7]> = Vec::new();
    let mut relatives: Vec<Option<f64>> = Vec::new();
    let run = |side: &Side, r: usize, change: &str| {
        [
            Some(side.table.run_id(r).to_string()),
            Some(change.to_string()),
            Some(side.text(r, "task")),
            Some(side.text(r, "gpu_model")),
        ]
    };
    for (side, list, change) in [(new, added, "added"), (old, removed, "removed")] {
        for &r in list {
            let [a, b, c, d] = run(side, r, change);
            rows.push([a, b, c, d, None, None, None]);
            relatives.push(None);
        }
    }
    for (r, fields) in changed {
        for f in fields {
            let [a, b, c, d] = run(new, *r, "changed");
            rows.push([
                a,
                b,
                c,
                d,
                Some(f.field.to_string()),
                text(f.old),
                text(f.new),
            ]);
            relatives.push(f.relative);
        }
    }
    let names = [
        "run_id",
        "change",
        "task",
        "gpu_model",
        "field",
        "old",
        "new",
    ];
    let mut columns: Vec<FrameColumn> = names
        .iter()
        .enumerate()
        .map(|(i, name)| FrameColumn {
            name: name.to_string(),
            data: ColumnData::Str(
                rows.iter()
                    .map(|r| r[i].as_deref().map(Into::into))
                    .collect(),
            ),
        })
        .collect();
    columns.push(FrameColumn {
        name: "relative_change".into(),
        data: ColumnData::Float(relatives),
    });
    Frame { columns }
}
