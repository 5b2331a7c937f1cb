//! The service's one door for questions. What each question takes is declared once
//! (`declare`); every front end's parameters are read with one grammar (`grammar`) into a
//! [`Request`], which the [`Door`] answers (`door`: the answer cache, keyed on the canonical
//! request, and the places costly questions take, `places`) with an [`Answer`] (`answer`: rows
//! and the envelope around them), written in one of the representations (`format`) by one
//! writer, and sent whole or, when it is too long to hold, as it is written ([`Reply`]).
//!
//! The questions: the run table's (`runs`: runs, one run, groups, the Pareto frontier, the best
//! runs), the fitted models' (`fits`: sweeps' logistic fits, runs' ITL mixtures), the
//! predictor's (`predict`), the raw-derived data (`raw`: timelines and ITL statistics;
//! `samples`: output lengths and ITL samples), the charts drawn of them (`charts`), SQL (`sql`),
//! the imported measurements' (`measurements`), models of the caller's own data (`models`), and
//! the leaderboard's files.

pub mod answer;
mod changes;
mod charts;
pub mod declare;
pub mod door;
mod fits;
pub mod format;
pub mod grammar;
pub mod measurements;
pub mod models;
pub mod places;
pub mod predict;
pub mod raw;
pub mod request;
mod runs;
mod samples;
pub mod sql;
mod statistics;

pub use self::answer::{
    Answer, Cell, Encoded, HEAD_COLUMNS, HEAD_ROWS, Head, Member, Nullable, Reply, Rows, Sent,
    SentBody, Shape,
};
pub use self::declare::*;
pub use self::door::{AnswerCache, Door, answer_cache};
pub use self::format::Format;
pub use self::grammar::*;
pub use self::request::Request;
