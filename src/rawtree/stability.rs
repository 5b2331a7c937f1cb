//! Stability of LLM runs (docs/toolkit.md §8): the per-run checks in order, with the toolkit's
//! thresholds and reason texts, and the cascade across batch sizes.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::results::LlmResults;
use crate::pycompat::repr::python_float_repr;
use crate::pycompat::value::safe_float;

/// Stability thresholds (§8.1).
pub const MIN_STEADY_DURATION_S: f64 = 20.0;
pub const BATCH_UTILIZATION_THRESHOLD: f64 = 0.85;

/// Stability of one LLM run before the cascade.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stability {
    pub unstable: bool,
    pub reason: String,
}

impl Stability {
    pub(super) fn stable() -> Self {
        Stability {
            unstable: false,
            reason: String::new(),
        }
    }
    pub(super) fn unstable(reason: String) -> Self {
        Stability {
            unstable: true,
            reason,
        }
    }
}

fn repr_or_none(v: Option<f64>) -> String {
    v.map_or_else(|| "None".to_string(), python_float_repr)
}

/// The per-run checks of §8.1, in order; the first failing one gives the reason.
pub fn stability_status(
    results: &Result<LlmResults, String>,
    max_num_seqs: Option<i64>,
    avg_batch: Option<f64>,
) -> Stability {
    let r = match results {
        Ok(r) => r,
        Err(e) => return Stability::unstable(format!("failed_to_load_results:{e}")),
    };
    let duration = safe_float(r.steady_state_duration.as_ref());
    if duration.is_none_or(|d| d < MIN_STEADY_DURATION_S) {
        return Stability::unstable(format!("short_steady_state:{}", repr_or_none(duration)));
    }
    let ept = r.energy_per_token();
    if ept.is_none_or(|e| e <= 0.0) {
        return Stability::unstable(format!("invalid_energy_per_token:{}", repr_or_none(ept)));
    }
    if let (Some(m), Some(avg)) = (max_num_seqs, avg_batch)
        && m > 0
    {
        let u = avg / m as f64;
        if u < BATCH_UTILIZATION_THRESHOLD {
            return Stability::unstable(format!("low_batch_utilization:{u:.6}"));
        }
    }
    Stability::stable()
}

/// Apply the cascade (§8.2) in place: per (model, task, GPU, num_gpus) group, every run at or
/// above the smallest unstable `max_num_seqs` becomes unstable.
pub fn apply_cascade(
    groups: &[Option<(String, String, String, i64)>],
    max_num_seqs: &[Option<i64>],
    status: &mut [Stability],
) {
    let mut threshold: HashMap<&(String, String, String, i64), i64> = HashMap::new();
    for ((g, m), s) in groups.iter().zip(max_num_seqs).zip(status.iter()) {
        if let (Some(g), Some(m), true) = (g, m, s.unstable) {
            let t = threshold.entry(g).or_insert(*m);
            *t = (*t).min(*m);
        }
    }
    for ((g, m), s) in groups.iter().zip(max_num_seqs).zip(status.iter_mut()) {
        if let (Some(g), Some(m)) = (g, m)
            && let Some(&t) = threshold.get(g)
            && *m >= t
            && !s.unstable
        {
            *s = Stability::unstable(format!("cascade_from_unstable_batch:{t}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(duration: f64, ept: f64) -> Result<LlmResults, String> {
        Ok(serde_json::from_value(serde_json::json!({
            "steady_state_duration": duration, "steady_state_energy_per_token": ept
        }))
        .unwrap())
    }

    #[test]
    fn stability_rules_in_order_with_exact_thresholds() {
        assert_eq!(
            stability_status(&results(20.0, 0.2), Some(16), Some(16.0)),
            Stability::stable()
        );
        assert_eq!(
            stability_status(&results(15.3, 0.2), Some(16), Some(16.0)).reason,
            "short_steady_state:15.3"
        );
        assert_eq!(
            stability_status(&results(30.0, 0.0), Some(16), Some(1.0)).reason,
            "invalid_energy_per_token:0.0"
        );
        assert_eq!(
            stability_status(&results(30.0, -1e-5), None, None).reason,
            "invalid_energy_per_token:-1e-05"
        );
        assert_eq!(
            stability_status(&results(30.0, 0.2), Some(32), Some(16.0)).reason,
            "low_batch_utilization:0.500000"
        );
        assert_eq!(
            stability_status(&results(30.0, 0.2), Some(32), Some(8.0)).reason,
            "low_batch_utilization:0.250000"
        );
        // Exactly 0.85 is stable; no prometheus skips the rule.
        assert!(!stability_status(&results(30.0, 0.2), Some(100), Some(85.0)).unstable);
        assert!(!stability_status(&results(30.0, 0.2), Some(100), None).unstable);
        let missing: Result<LlmResults, String> = Ok(LlmResults::default());
        assert_eq!(
            stability_status(&missing, None, None).reason,
            "short_steady_state:None"
        );
        assert_eq!(
            stability_status(&Err("boom".into()), None, None).reason,
            "failed_to_load_results:boom"
        );
    }

    #[test]
    fn cascade_from_the_smallest_unstable_batch() {
        let g = Some((
            "org/m".to_string(),
            "gpqa".to_string(),
            "H100".to_string(),
            1,
        ));
        let other = Some((
            "org/m".to_string(),
            "gpqa".to_string(),
            "H100".to_string(),
            2,
        ));
        let groups = vec![g.clone(), g.clone(), g.clone(), other];
        let mns = vec![Some(8), Some(16), Some(32), Some(64)];
        let mut st = vec![
            Stability::unstable("low_batch_utilization:0.100000".into()),
            Stability::stable(),
            Stability::unstable("low_batch_utilization:0.500000".into()),
            Stability::stable(),
        ];
        apply_cascade(&groups, &mns, &mut st);
        assert_eq!(st[1].reason, "cascade_from_unstable_batch:8");
        assert_eq!(st[2].reason, "low_batch_utilization:0.500000");
        assert!(!st[3].unstable);
    }
}
