//! What a question answers, before it is written: rows (of the run table, or a frame of their
//! own), the envelope's members a JSON answer wraps them in, the total before paging, the next
//! page and the warnings. [`Answer::encode`] is the one writer of every representation: JSON
//! in its envelope, CSV, NDJSON, Arrow and Parquet with the rows alone.

use bytes::Bytes;

use crate::engine::frame::Frame;
use crate::engine::{Domain, EngineError};
use crate::service::Snapshot;
use crate::service::encode::{self, TableJsonCache};

use super::format::Format;
use crate::service::coding::Variants;

/// A member of a JSON answer's envelope.
#[derive(Debug, Clone, PartialEq)]
pub enum Member {
    Text(String),
    /// A text or null (`next`).
    MaybeText(Option<String>),
    Count(usize),
    /// A count or null (`limit`).
    MaybeCount(Option<usize>),
    /// A number or null (`deadline`).
    Number(Option<f64>),
    /// Names, as an array of strings (`by`, `per`).
    Names(Vec<String>),
}

/// An answer's rows.
pub enum Rows {
    /// Rows of the snapshot's run table of `domain`, with these columns (positions).
    Table {
        domain: Domain,
        rows: Vec<usize>,
        columns: Vec<usize>,
    },
    /// Rows of their own.
    Frame(Frame),
    /// Rows of their own, shared with a cache (a fit's).
    Shared(std::sync::Arc<Frame>),
    /// Groups: the first `by` columns of the frame are each group's key (JSON writes it as
    /// `key`: the bare value for one field, an array for several or none).
    Groups { frame: Frame, by: usize },
}

/// Which of an answer's columns may hold nulls, decided when Arrow or Parquet asks.
pub enum Nullable {
    /// Every column.
    All,
    /// As the run table of the domain says of its fields.
    Table(Domain),
    /// Groups: `count` never, the grouping fields as the run table says, the aggregates may.
    Groups { domain: Domain, by: Vec<String> },
    /// The columns this says may.
    Where(fn(&str) -> bool),
    /// As the run table of the domain says of its fields, and the columns this says may.
    TableOr(Domain, fn(&str) -> bool),
}

impl Nullable {
    fn of(&self, snapshot: &Snapshot, name: &str) -> bool {
        match self {
            Nullable::All => true,
            Nullable::Table(domain) => snapshot.table(*domain).is_nullable(name),
            Nullable::Groups { domain, by } => match name {
                "count" => false,
                _ if by.iter().any(|b| b == name) => snapshot.table(*domain).is_nullable(name),
                _ => true,
            },
            Nullable::Where(may) => may(name),
            Nullable::TableOr(domain, may) => {
                may(name) || snapshot.table(*domain).is_nullable(name)
            }
        }
    }
}

impl Rows {
    /// The selected rows and columns of a run table, as a frame.
    fn table_frame(&self, snapshot: &Snapshot) -> Option<Frame> {
        match self {
            Rows::Table {
                domain,
                rows,
                columns,
            } => Some(snapshot.table(*domain).frame.select(rows, columns)),
            _ => None,
        }
    }
}

/// How a JSON answer wraps its rows.
pub enum Shape {
    /// `{members…, "warnings": […], "<key>": [rows]}`.
    Envelope {
        members: Vec<(&'static str, Member)>,
        key: &'static str,
    },
    /// The one row as an object.
    Object,
    /// The rows alone, as an array.
    Array,
    /// A document of the question's making (the rows inside it, as it puts them).
    Document(serde_json::Value),
}

/// A question's answer.
pub struct Answer {
    pub shape: Shape,
    pub rows: Rows,
    /// Which columns Arrow and Parquet may mark as holding nulls (read only for those two).
    pub nullable: Nullable,
    /// Matching rows before paging (`X-Total-Count`).
    pub total: Option<usize>,
    /// The next page, if one follows.
    pub next: Option<String>,
    /// Hints about the request (a filter value that matches no run).
    pub warnings: Vec<String>,
}

impl Answer {
    /// The answer in `format`: the one writer of every representation.
    pub fn encode(
        self,
        format: Format,
        snapshot: &Snapshot,
        cells: Option<&TableJsonCache>,
    ) -> Result<Encoded, EngineError> {
        let body = match format {
            Format::Json => self.json(snapshot, cells),
            _ => {
                let nullable = |name: &str| self.nullable.of(snapshot, name);
                match &self.rows {
                    rows @ Rows::Table { .. } => {
                        let frame = rows.table_frame(snapshot).expect("rows of a table");
                        encode::encode_owned_frame(frame, format, &nullable, encode::json_array)?
                    }
                    Rows::Shared(frame) => {
                        encode::encode_frame(frame, format, &nullable, encode::json_array)?
                    }
                    Rows::Frame(frame) | Rows::Groups { frame, .. } => {
                        encode::encode_frame(frame, format, &nullable, encode::json_array)?
                    }
                }
            }
        };
        let head = (format == Format::Json)
            .then(|| self.head(snapshot, cells))
            .flatten();
        Ok(Encoded {
            total: self.total,
            next: self.next,
            warnings: self.warnings,
            head,
            ..Encoded::new(format.content_type(), Bytes::from(body))
        })
    }

    /// The head of the answer's list of rows, when its JSON is a list or an envelope of one.
    fn head(&self, snapshot: &Snapshot, cells: Option<&TableJsonCache>) -> Option<Head> {
        let (key, total) = match &self.shape {
            Shape::Array => (None, None),
            Shape::Envelope { members, key } => {
                let total = members.iter().find_map(|(name, m)| match m {
                    Member::Count(n) | Member::MaybeCount(Some(n)) if *name == "total" => Some(*n),
                    _ => None,
                });
                (Some(*key), total)
            }
            Shape::Object | Shape::Document(_) => return None,
        };
        let rows = match &self.rows {
            Rows::Table { rows, .. } => rows.len(),
            Rows::Frame(f) | Rows::Groups { frame: f, .. } => f.num_rows(),
            Rows::Shared(f) => f.num_rows(),
        };
        let mut first = Vec::new();
        self.json_rows(&mut first, snapshot, cells, false, HEAD_ROWS);
        Some(Head {
            key,
            rows,
            first,
            total,
        })
    }

    fn json(&self, snapshot: &Snapshot, cells: Option<&TableJsonCache>) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.estimated_json_bytes());
        match &self.shape {
            Shape::Object => self.json_rows(&mut out, snapshot, cells, true, usize::MAX),
            Shape::Array => self.json_rows(&mut out, snapshot, cells, false, usize::MAX),
            Shape::Document(doc) => {
                serde_json::to_writer(&mut out, doc).expect("a JSON value writes to memory")
            }
            Shape::Envelope { members, key } => {
                out.push(b'{');
                for (i, (name, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    encode::json_str(&mut out, name);
                    out.push(b':');
                    json_member(&mut out, value);
                }
                encode::json_warnings(&mut out, &self.warnings);
                out.push(b',');
                encode::json_str(&mut out, key);
                out.push(b':');
                self.json_rows(&mut out, snapshot, cells, false, usize::MAX);
                out.push(b'}');
            }
        }
        out
    }

    fn estimated_json_bytes(&self) -> usize {
        let cells = match &self.rows {
            Rows::Table { rows, columns, .. } => rows.len() * columns.len(),
            Rows::Frame(f) | Rows::Groups { frame: f, .. } => f.num_rows() * f.columns.len(),
            Rows::Shared(f) => f.num_rows() * f.columns.len(),
        };
        cells * 64 + 256
    }

    /// The rows as a JSON array (the first `limit` of them), or the first as an object
    /// (`object`).
    fn json_rows(
        &self,
        out: &mut Vec<u8>,
        snapshot: &Snapshot,
        cells: Option<&TableJsonCache>,
        object: bool,
        limit: usize,
    ) {
        match &self.rows {
            Rows::Table {
                domain,
                rows,
                columns,
            } => {
                let rows = &rows[..rows.len().min(limit)];
                let table = snapshot.table(*domain);
                match cells {
                    Some(cells) if !object => cells
                        .get(snapshot.generation, *domain, table)
                        .write_array(out, rows, columns),
                    _ => {
                        let frame = table.frame.select(rows, columns);
                        json_list(out, &frame, object, limit);
                    }
                }
            }
            Rows::Frame(frame) => json_list(out, frame, object, limit),
            Rows::Shared(frame) => json_list(out, frame, object, limit),
            Rows::Groups { frame, by } => json_groups(out, frame, *by, limit),
        }
    }
}

/// The first `limit` rows of `frame` as a JSON array, or the first as an object (`object`).
fn json_list(out: &mut Vec<u8>, frame: &Frame, object: bool, limit: usize) {
    if object {
        encode::json_object(out, frame, 0);
    } else if limit >= frame.num_rows() {
        encode::json_array(out, frame);
    } else {
        out.push(b'[');
        for r in 0..limit {
            if r > 0 {
                out.push(b',');
            }
            encode::json_object(out, frame, r);
        }
        out.push(b']');
    }
}

fn json_member(out: &mut Vec<u8>, value: &Member) {
    match value {
        Member::Text(s) | Member::MaybeText(Some(s)) => encode::json_str(out, s),
        Member::Count(n) | Member::MaybeCount(Some(n)) => {
            out.extend_from_slice(n.to_string().as_bytes())
        }
        Member::Number(Some(x)) => encode::json_f64(out, *x),
        Member::MaybeText(None) | Member::MaybeCount(None) | Member::Number(None) => {
            out.extend_from_slice(b"null")
        }
        Member::Names(names) => {
            out.push(b'[');
            for (i, n) in names.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                encode::json_str(out, n);
            }
            out.push(b']');
        }
    }
}

/// Groups (the first `limit`) as the toolkit's group_by shapes them: each its `key` (the bare
/// value for one field, an array for several, an empty array for none), then every column.
fn json_groups(out: &mut Vec<u8>, frame: &Frame, by: usize, limit: usize) {
    out.push(b'[');
    for r in 0..frame.num_rows().min(limit) {
        if r > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"key\":");
        if by == 1 {
            encode::json_cell_of(out, &frame.columns[0], r);
        } else {
            out.push(b'[');
            for i in 0..by {
                if i > 0 {
                    out.push(b',');
                }
                encode::json_cell_of(out, &frame.columns[i], r);
            }
            out.push(b']');
        }
        out.push(b',');
        encode::json_members(out, frame, r);
        out.push(b'}');
    }
    out.push(b']');
}

/// An encoded answer with the paging facts that go into headers.
#[derive(Debug)]
pub struct Encoded {
    pub content_type: &'static str,
    pub body: Bytes,
    /// Matching rows before paging (`X-Total-Count`).
    pub total: Option<usize>,
    /// The next page (`Link: <…>; rel="next"`).
    pub next: Option<String>,
    /// Hints about the request (a filter value that matches no run), one `Warning` header each.
    pub warnings: Vec<String>,
    /// The body compressed in each coding a client asked for, made once (`transport`).
    pub variants: Variants,
    /// Whether the answer was sent before: `transport` keeps its response the second time it is
    /// sent (a fresh query's answer, most of a dashboard's, is seldom asked for again, and keeping
    /// each one cost an insertion in a second cache).
    pub sent: std::sync::atomic::AtomicBool,
    /// A JSON answer's list of rows in short, for a front end that shows a few rows without
    /// reading the body (MCP's text table).
    pub head: Option<Head>,
}

impl Encoded {
    /// `body` of `content_type`, with no paging facts, warnings or head.
    pub fn new(content_type: &'static str, body: impl Into<Bytes>) -> Encoded {
        Encoded {
            content_type,
            body: body.into(),
            total: None,
            next: None,
            warnings: Vec::new(),
            variants: Default::default(),
            sent: Default::default(),
            head: None,
        }
    }
}

/// The list of rows of a JSON answer in short: where it is, how many rows it has, its first
/// rows, and the envelope's `total`.
#[derive(Debug)]
pub struct Head {
    /// The envelope's member holding the list; none when the answer is the bare list.
    pub key: Option<&'static str>,
    /// Rows of the list.
    pub rows: usize,
    /// The first `HEAD_ROWS` rows (or all), as a JSON array written as the body writes them.
    pub first: Vec<u8>,
    /// The envelope's `total` member, if it has one and it is a count.
    pub total: Option<usize>,
}

/// Rows of a [`Head`].
pub const HEAD_ROWS: usize = 10;
