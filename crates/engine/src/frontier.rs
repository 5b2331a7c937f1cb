//! The leaderboard's client logic over a run table (docs/leaderboard.md §4): the Pareto frontier
//! of two numeric fields, and the energy-optimal run per group under a latency deadline and an
//! energy budget. Rows come in and go out as positions in the table; the caller gives them in
//! the order that decides ties (the leaderboard's file order).

use std::cmp::Ordering;
use std::collections::HashMap;

use super::Domain;
use super::error::EngineError;
use super::table::RunTable;

/// What a frontier or a choice is computed over.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontierQuery {
    /// The numeric field on the x axis (latency).
    pub x: String,
    /// The numeric field on the y axis (energy).
    pub y: String,
    /// Fields whose values split the runs into separate frontiers; none: one frontier.
    pub per: Vec<String>,
}

/// A frontier's or a choice's runs, and the runs left out for want of a value.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    pub rows: Vec<usize>,
    /// Runs whose x or y (latency or energy) is null or not finite: never on a frontier, never
    /// chosen.
    pub without_value: usize,
}

/// Limits of a choice: runs with latency at most `deadline` and energy at most `energy_budget`
/// (inclusive; `None`: no limit).
#[derive(Debug, Clone, PartialEq)]
pub struct BestQuery {
    pub latency: String,
    pub energy: String,
    pub deadline: Option<f64>,
    pub energy_budget: Option<f64>,
    /// Fields the choice is made per (default `model_id`); none: one run over all.
    pub per: Vec<String>,
}

/// The leaderboard's latency field of a domain: the median ITL, the batch latency.
pub fn default_latency(domain: Domain) -> &'static str {
    match domain {
        Domain::Llm => "median_itl_ms",
        Domain::Diffusion => "batch_latency_s",
    }
}

/// The leaderboard's energy field of a domain: per token, per generation.
pub fn default_energy(domain: Domain) -> &'static str {
    match domain {
        Domain::Llm => "energy_per_token_joules",
        Domain::Diffusion => "energy_per_generation_joules",
    }
}

/// The leaderboard's default deadline for `task` in the unit of `latency`, when the latency is
/// the leaderboard's kind for the domain (an ITL in ms, the batch latency in s): 500 ms for every
/// LLM and MLLM task (the frontend treats a task it does not know as one), 30 s for
/// text-to-image, 300 s for text-to-video.
pub fn default_deadline(domain: Domain, task: &str, latency: &str) -> Option<f64> {
    match domain {
        Domain::Llm if latency.ends_with("_itl_ms") => Some(500.0),
        Domain::Diffusion if latency == "batch_latency_s" => match task {
            "text-to-image" => Some(30.0),
            "text-to-video" => Some(300.0),
            _ => None,
        },
        _ => None,
    }
}

/// The finite values of numeric field `field` at `rows`, None where null or not finite.
fn values(t: &RunTable, field: &str, rows: &[usize]) -> Result<Vec<Option<f64>>, EngineError> {
    let c = t.require_numeric(field)?;
    let col = t.column(c);
    Ok(rows
        .iter()
        .map(|&r| col.get(r).as_f64().filter(|v| v.is_finite()))
        .collect())
}

/// `positions` (into `rows`) split by the values of `per` at their rows, groups in the order of
/// their first position.
fn groups(
    t: &RunTable,
    per: &[String],
    rows: &[usize],
    positions: Vec<usize>,
) -> Result<Vec<Vec<usize>>, EngineError> {
    let cols = per
        .iter()
        .map(|p| t.require_field(p))
        .collect::<Result<Vec<_>, _>>()?;
    let position_of: HashMap<usize, usize> = positions.iter().map(|&i| (rows[i], i)).collect();
    Ok(
        t.group_rows(&cols, positions.iter().map(|&i| rows[i]).collect())
            .into_iter()
            .map(|g| g.into_iter().map(|r| position_of[&r]).collect())
            .collect(),
    )
}

/// The runs of `rows` on the Pareto frontier of (x, y), per group of `per` (groups in the order
/// of their first run): a run is on it when no run of its group has both a strictly lower x and
/// a strictly lower y. Equal points are all kept, as is a run that another beats in one field
/// while tying the other. Within a group the runs come by x, then y, then their order in `rows`.
pub fn pareto(t: &RunTable, rows: &[usize], q: &FrontierQuery) -> Result<Chosen, EngineError> {
    let xs = values(t, &q.x, rows)?;
    let ys = values(t, &q.y, rows)?;
    let mut without_value = 0;
    let mut usable = Vec::with_capacity(rows.len());
    // Positions into `rows`, so ties keep the caller's order.
    for (i, (x, y)) in xs.iter().zip(&ys).enumerate() {
        if x.is_some() && y.is_some() {
            usable.push(i);
        } else {
            without_value += 1;
        }
    }
    let points: Vec<(f64, f64)> = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| (x.unwrap_or_default(), y.unwrap_or_default()))
        .collect();
    let mut out = Vec::new();
    for group in groups(t, &q.per, rows, usable)? {
        out.extend(frontier_of(&points, group).into_iter().map(|i| rows[i]));
    }
    Ok(Chosen {
        rows: out,
        without_value,
    })
}

/// The energy-optimal run per group of `per` among the runs of `rows` within the deadline and
/// the budget, as the leaderboard's table chooses it: the least energy in each group, the first
/// in `rows`' order on an exact tie, the groups' runs sorted by energy (stably: equal energies
/// keep the order of their groups' first runs).
pub fn best(t: &RunTable, rows: &[usize], q: &BestQuery) -> Result<Chosen, EngineError> {
    let lat = values(t, &q.latency, rows)?;
    let energy = values(t, &q.energy, rows)?;
    let mut without_value = 0;
    let mut eligible = Vec::new();
    for i in 0..rows.len() {
        let (Some(l), Some(e)) = (lat[i], energy[i]) else {
            without_value += 1;
            continue;
        };
        if q.deadline.is_none_or(|d| l <= d) && q.energy_budget.is_none_or(|b| e <= b) {
            eligible.push(i);
        }
    }
    let energies: Vec<f64> = energy.iter().map(|e| e.unwrap_or_default()).collect();
    let winners = least_per_group(&energies, groups(t, &q.per, rows, eligible)?);
    Ok(Chosen {
        rows: winners.into_iter().map(|i| rows[i]).collect(),
        without_value,
    })
}

/// The members of `group` (positions into `points`) on its frontier, by x, then y, then
/// position: those for which no member has both a strictly lower x and a strictly lower y.
fn frontier_of(points: &[(f64, f64)], mut group: Vec<usize>) -> Vec<usize> {
    group.sort_by(|&a, &b| {
        let ((ax, ay), (bx, by)) = (points[a], points[b]);
        ax.total_cmp(&bx).then(ay.total_cmp(&by)).then(a.cmp(&b))
    });
    // Walk by x: a member is beaten when the lowest y over strictly lower x is below its own.
    let mut out = Vec::new();
    let mut lowest_before = f64::INFINITY;
    let mut k = 0;
    while k < group.len() {
        let x = points[group[k]].0;
        let mut lowest_here = f64::INFINITY;
        while k < group.len() && points[group[k]].0 == x {
            let y = points[group[k]].1;
            if y <= lowest_before {
                out.push(group[k]);
            }
            lowest_here = lowest_here.min(y);
            k += 1;
        }
        lowest_before = lowest_before.min(lowest_here);
    }
    out
}

/// Each group's member of least energy (the first on an exact tie), ascending by energy; equal
/// energies keep the groups' order.
fn least_per_group(energy: &[f64], groups: Vec<Vec<usize>>) -> Vec<usize> {
    let mut winners: Vec<usize> = groups
        .into_iter()
        .filter_map(|g| {
            g.into_iter()
                .reduce(|best, i| if energy[i] < energy[best] { i } else { best })
        })
        .collect();
    winners.sort_by(|&a, &b| energy[a].partial_cmp(&energy[b]).unwrap_or(Ordering::Equal));
    winners
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontier_keeps_ties_and_drops_only_the_strictly_beaten() {
        let p = [
            (1.0, 9.0), // 0: lowest x
            (2.0, 5.0), // 1
            (2.0, 5.0), // 2: equal to 1, kept too
            (2.0, 7.0), // 3: same x as 1, higher y: nobody has both lower, kept
            (3.0, 5.0), // 4: same y as 1 at higher x: not strictly lower y, kept
            (3.0, 6.0), // 5: beaten by 1 (2 < 3 and 5 < 6)
            (4.0, 1.0), // 6: lowest y
            (5.0, 1.0), // 7: ties 6 in y, kept
            (5.0, 2.0), // 8: beaten by 6
        ];
        assert_eq!(
            frontier_of(&p, (0..p.len()).rev().collect()),
            vec![0, 1, 2, 3, 4, 6, 7]
        );
        assert_eq!(frontier_of(&p, vec![]), Vec::<usize>::new());
        assert_eq!(frontier_of(&p, vec![8]), vec![8]);
    }

    #[test]
    fn least_energy_first_in_order_wins_then_sorted() {
        let e = [3.0, 2.0, 2.0, 5.0, 1.0, 2.0];
        // Group A: 0, 1, 2 (1 and 2 tie: the first, 1, wins); B: 3, 4 (4); C: 5 (ties A's 2.0).
        assert_eq!(
            least_per_group(&e, vec![vec![0, 1, 2], vec![3, 4], vec![5]]),
            vec![4, 1, 5]
        );
        // The tie between groups keeps their order: C before A when C comes first.
        assert_eq!(
            least_per_group(&e, vec![vec![5], vec![2, 1, 0]]),
            vec![5, 2]
        );
    }
}
