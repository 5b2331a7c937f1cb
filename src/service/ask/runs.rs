//! The run table's questions: runs (filtered, sorted, paged), one run, groups, the Pareto
//! frontier and the energy-optimal runs (the leaderboard's client logic, docs/leaderboard.md §4;
//! ties go to the first run in the leaderboard's file order, as in the browser).

use crate::engine::frontier::{self, Chosen};
use crate::engine::{RunQuery, RunTable};
use crate::service::leaderboard::files::in_file_order;
use crate::service::{ServiceError, Snapshot};

use super::answer::{Answer, Member, Nullable, Rows, Shape};
use super::declare::Question;
use super::request::Request;

/// The answer to a question of the run table; `None` when the question is of something else.
pub(super) fn answer(
    req: &Request,
    snapshot: &Snapshot,
    max_rows: usize,
) -> Option<Result<Answer, ServiceError>> {
    let table = snapshot.table(req.domain);
    Some(match req.question {
        Question::List => list(req, table, max_rows),
        Question::One => one(req, table),
        Question::Group => group(req, table),
        Question::Pareto => pareto(req, table),
        Question::Best => best(req, table),
        Question::Statistics => super::statistics::answer(req, table),
        _ => return None,
    })
}

fn list(req: &Request, table: &RunTable, max_rows: usize) -> Result<Answer, ServiceError> {
    let q = req.params.run_query(req.domain, table, max_rows)?;
    let warnings = req.params.filter_warnings(req.domain, table);
    let sel = table.select(&q)?;
    let next = match q.limit {
        Some(l) if q.offset.saturating_add(l) < sel.total => {
            Some(req.params.link(&req.path, q.offset + l))
        }
        _ => None,
    };
    Ok(Answer {
        shape: Shape::Envelope {
            members: vec![
                ("domain", Member::Text(req.domain.as_str().into())),
                ("total", Member::Count(sel.total)),
                ("offset", Member::Count(q.offset)),
                ("limit", Member::MaybeCount(q.limit)),
                ("count", Member::Count(sel.rows.len())),
                ("next", Member::MaybeText(next.clone())),
            ],
            key: "runs",
        },
        nullable: Nullable::Table(req.domain),
        total: Some(sel.total),
        next,
        warnings,
        rows: Rows::Table {
            domain: req.domain,
            rows: sel.rows,
            columns: sel.columns,
        },
    })
}

fn one(req: &Request, table: &RunTable) -> Result<Answer, ServiceError> {
    let fields = req.params.fields(table)?;
    let run_id = req.run_id.as_deref().unwrap_or_default();
    let row = table
        .row_of(run_id)
        .ok_or_else(|| ServiceError::UnknownRun {
            domain: req.domain,
            run_id: run_id.to_string(),
        })?;
    let columns = table.projection(fields.as_deref())?;
    Ok(Answer {
        shape: Shape::Object,
        nullable: Nullable::Table(req.domain),
        total: None,
        next: None,
        warnings: Vec::new(),
        rows: Rows::Table {
            domain: req.domain,
            rows: vec![row],
            columns,
        },
    })
}

fn group(req: &Request, table: &RunTable) -> Result<Answer, ServiceError> {
    let q = req.params.group_query(req.domain, table)?;
    let warnings = req.params.filter_warnings(req.domain, table);
    let g = table.group(&q)?;
    Ok(Answer {
        shape: Shape::Envelope {
            members: vec![
                ("domain", Member::Text(req.domain.as_str().into())),
                ("by", Member::Names(g.by.clone())),
                ("count", Member::Count(g.frame.num_rows())),
            ],
            key: "groups",
        },
        nullable: Nullable::Groups {
            domain: req.domain,
            by: q.by,
        },
        total: Some(g.frame.num_rows()),
        next: None,
        warnings,
        rows: Rows::Groups {
            by: g.by.len(),
            frame: g.frame,
        },
    })
}

/// The filtered runs in the leaderboard's file order.
fn rows_in_file_order(table: &RunTable, q: &RunQuery) -> Result<Vec<usize>, ServiceError> {
    let mut rows = table.filter_rows(&q.filters, q.stability)?;
    in_file_order(table, &mut rows);
    Ok(rows)
}

/// The chosen runs with the envelope's `members` (after `domain`, before the counts).
fn chosen(
    req: &Request,
    table: &RunTable,
    chosen: Chosen,
    members: Vec<(&'static str, Member)>,
    warnings: Vec<String>,
) -> Result<Answer, ServiceError> {
    let fields = req.params.fields(table)?;
    let columns = table.projection(fields.as_deref())?;
    let mut all = vec![("domain", Member::Text(req.domain.as_str().into()))];
    all.extend(members);
    all.push(("count", Member::Count(chosen.rows.len())));
    all.push(("without_value", Member::Count(chosen.without_value)));
    Ok(Answer {
        shape: Shape::Envelope {
            members: all,
            key: "runs",
        },
        nullable: Nullable::Table(req.domain),
        total: Some(chosen.rows.len()),
        next: None,
        warnings,
        rows: Rows::Table {
            domain: req.domain,
            rows: chosen.rows,
            columns,
        },
    })
}

fn pareto(req: &Request, table: &RunTable) -> Result<Answer, ServiceError> {
    let (filters, q) = req.params.pareto_query(req.domain, table)?;
    let warnings = req.params.filter_warnings(req.domain, table);
    let rows = rows_in_file_order(table, &filters)?;
    let frontier = frontier::pareto(table, &rows, &q)?;
    let members = vec![
        ("x", Member::Text(q.x)),
        ("y", Member::Text(q.y)),
        ("per", Member::Names(q.per)),
    ];
    chosen(req, table, frontier, members, warnings)
}

fn best(req: &Request, table: &RunTable) -> Result<Answer, ServiceError> {
    let (filters, q) = req.params.best_query(req.domain, table)?;
    let warnings = req.params.filter_warnings(req.domain, table);
    let rows = rows_in_file_order(table, &filters)?;
    let best = frontier::best(table, &rows, &q)?;
    let members = vec![
        ("latency", Member::Text(q.latency)),
        ("deadline", Member::Number(q.deadline)),
        ("energy", Member::Text(q.energy)),
        ("energy_budget", Member::Number(q.energy_budget)),
        ("per", Member::Names(q.per)),
    ];
    chosen(req, table, best, members, warnings)
}
