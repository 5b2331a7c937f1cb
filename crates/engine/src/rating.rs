//! The energy rating of a run, as AI Energy Score defines its star rating (huggingface/AIEnergyScore,
//! index.md, "What do the star ratings mean?" and "Text Generation Model Classes"): the energy range
//! of the runs of a task (for text generation, of a size class within it) is divided into five equal
//! bands; a run in the lowest band gets 5 stars, one in the highest 1 star. Size classes by total
//! parameters: A up to 20 B, B up to 66 B, C above. Here every LLM task is rated within its size
//! classes (they are all text generation, from text, images or video) and each diffusion task as a
//! whole; the energy is energy per output token (LLM) or per generation (diffusion); LLM runs that
//! are not stable get no rating, nor do runs without an energy. Runs on both GPU models are rated
//! together: AI Energy Score fixes the GPU (H100), this dataset has two.

use std::collections::BTreeMap;

use crate::Domain;
use crate::frame::{ColumnData, Frame, Value};

/// The energy field a domain's runs are rated on.
pub fn energy_field(domain: Domain) -> &'static str {
    match domain {
        Domain::Llm => "energy_per_token_joules",
        Domain::Diffusion => "energy_per_generation_joules",
    }
}

/// AI Energy Score's size class of a text generation model with `total` billion parameters.
pub fn size_class(total: f64) -> &'static str {
    if total <= 20.0 {
        "A"
    } else if total <= 66.0 {
        "B"
    } else {
        "C"
    }
}

/// A run's group: its task, and for LLM runs its size class.
fn group(domain: Domain, frame: &Frame, row: usize) -> Option<String> {
    let get = |name: &str| frame.column(name).map(|c| c.data.get(row));
    let task = match get("task")? {
        Value::Str(s) => s,
        _ => return None,
    };
    match domain {
        Domain::Llm => {
            if get("is_stable") != Some(Value::Bool(true)) {
                return None;
            }
            let total = get("total_params_billions")?.as_f64()?;
            Some(format!("{task}|{}", size_class(total)))
        }
        Domain::Diffusion => Some(task.to_string()),
    }
}

/// One run's rating with what it was made of.
#[derive(Debug, Clone, PartialEq)]
pub struct Rating {
    pub stars: i64,
    /// The task, and for LLM runs ` · class X`.
    pub group: String,
    pub energy: f64,
    /// The lowest and highest energy of the group's runs.
    pub min: f64,
    pub max: f64,
    /// Runs rated in the group.
    pub runs: usize,
}

/// Every row's rating (None where a run is not rated).
pub fn ratings(domain: Domain, frame: &Frame) -> Vec<Option<Rating>> {
    let n = frame.num_rows();
    let energy = frame.column(energy_field(domain)).map(|c| &c.data);
    let value = |r: usize| {
        energy
            .and_then(|c: &ColumnData| c.get(r).as_f64())
            .filter(|v| v.is_finite())
    };
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for r in 0..n {
        if let (Some(g), Some(_)) = (group(domain, frame, r), value(r)) {
            groups.entry(g).or_default().push(r);
        }
    }
    let mut out = vec![None; n];
    for (g, rows) in groups {
        let (min, max) = rows
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| {
                let v = value(r).unwrap_or(lo);
                (lo.min(v), hi.max(v))
            });
        let width = (max - min) / 5.0;
        let label = match g.split_once('|') {
            Some((task, class)) => format!("{task} · class {class}"),
            None => g.clone(),
        };
        for &r in &rows {
            let e = value(r).unwrap_or(min);
            let band = if width > 0.0 {
                (((e - min) / width).floor() as i64).clamp(0, 4)
            } else {
                0
            };
            out[r] = Some(Rating {
                stars: 5 - band,
                group: label.clone(),
                energy: e,
                min,
                max,
                runs: rows.len(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::FrameColumn;

    fn frame(tasks: &[&str], totals: &[f64], energy: &[f64]) -> Frame {
        let s = |v: &[&str]| ColumnData::Str(v.iter().map(|x| Some((*x).into())).collect());
        let f = |v: &[f64]| ColumnData::Float(v.iter().map(|x| Some(*x)).collect());
        let col = |name: &str, data| FrameColumn {
            name: name.into(),
            data,
        };
        Frame {
            columns: vec![
                col("task", s(tasks)),
                col("total_params_billions", f(totals)),
                col("is_stable", ColumnData::Bool(vec![Some(true); tasks.len()])),
                col("energy_per_token_joules", f(energy)),
            ],
        }
    }

    #[test]
    fn five_equal_bands_of_the_range_per_task_and_class() {
        // Class A runs of one task: range 1..=11, bands of width 2: [1,3) 5★, [3,5) 4★, ...,
        // [9,11] 1★. The class C run is alone in its group: 5★.
        let f = frame(
            &["t", "t", "t", "t", "t", "t", "t"],
            &[8.0, 8.0, 8.0, 20.0, 8.0, 8.0, 70.0],
            &[1.0, 2.99, 3.0, 5.0, 9.0, 11.0, 100.0],
        );
        let stars: Vec<i64> = ratings(Domain::Llm, &f)
            .iter()
            .map(|r| r.as_ref().unwrap().stars)
            .collect();
        assert_eq!(stars, vec![5, 5, 4, 3, 1, 1, 5]);
        let r = ratings(Domain::Llm, &f)[3].clone().unwrap();
        assert_eq!(
            (r.group.as_str(), r.min, r.max, r.runs),
            ("t · class A", 1.0, 11.0, 6)
        );
        assert_eq!(
            (
                size_class(20.0),
                size_class(20.5),
                size_class(66.0),
                size_class(66.1)
            ),
            ("A", "B", "B", "C")
        );
    }
}
