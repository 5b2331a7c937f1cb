//! What a question answers, before it is written: rows (of the run table, or a frame of their
//! own), the envelope's members a JSON answer wraps them in, the total before paging, the next
//! page and the warnings. [`Answer::encode`] is the one writer of every representation: JSON
//! in its envelope, CSV, NDJSON, Arrow and Parquet with the rows alone.

use std::sync::Arc;

use bytes::Bytes;

use crate::engine::frame::{ColumnData, Frame, FrameColumn};
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
    /// How many rows there are.
    pub(super) fn len(&self) -> usize {
        match self {
            Rows::Table { rows, .. } => rows.len(),
            Rows::Frame(f) | Rows::Groups { frame: f, .. } => f.num_rows(),
            Rows::Shared(f) => f.num_rows(),
        }
    }

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
            .then(|| self.head(snapshot))
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
    fn head(&self, snapshot: &Snapshot) -> Option<Head> {
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
        let rows = self.rows.len();
        let (members, first) = self.members(snapshot);
        let shown: Vec<&Source> = members
            .iter()
            .filter(|m| !m.nests(first.first().copied().unwrap_or(0)))
            .take(HEAD_COLUMNS)
            .collect();
        let mut cells = Vec::with_capacity(shown.len() * first.len());
        for &r in &first {
            cells.extend(shown.iter().map(|m| m.cell(r)));
        }
        Some(Head {
            key,
            rows,
            total,
            fields: members.len(),
            columns: shown.iter().map(|m| m.name().to_string()).collect(),
            cells,
        })
    }

    /// The members of the answer's rows as its JSON writes them, in order, and the first
    /// `HEAD_ROWS` rows (their positions in the members' columns).
    fn members<'a>(&'a self, snapshot: &'a Snapshot) -> (Vec<Source<'a>>, Vec<usize>) {
        let first = |n: usize| (0..n.min(HEAD_ROWS)).collect();
        let columns_of = |f: &'a Frame| {
            (
                f.columns.iter().map(Source::Column).collect(),
                first(f.num_rows()),
            )
        };
        match &self.rows {
            Rows::Table {
                domain,
                rows,
                columns,
            } => {
                let frame = &snapshot.table(*domain).frame;
                let members = columns
                    .iter()
                    .map(|&c| Source::Column(&frame.columns[c]))
                    .collect();
                (members, rows.iter().take(HEAD_ROWS).copied().collect())
            }
            Rows::Frame(f) => columns_of(f),
            Rows::Shared(f) => columns_of(f),
            Rows::Groups { frame, by } => {
                let key = Source::Key(&frame.columns[..*by]);
                let members = std::iter::once(key)
                    .chain(frame.columns.iter().map(Source::Column))
                    .collect();
                (members, first(frame.num_rows()))
            }
        }
    }

    fn json(&self, snapshot: &Snapshot, cells: Option<&TableJsonCache>) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.estimated_json_bytes());
        match &self.shape {
            Shape::Object => self.json_rows(&mut out, snapshot, cells, true),
            Shape::Array => self.json_rows(&mut out, snapshot, cells, false),
            Shape::Document(serde_json::Value::Object(members)) => {
                // A document of members names the snapshot it is from, as envelopes do.
                let mut members = members.clone();
                members.insert(
                    "snapshot".into(),
                    serde_json::to_value(snapshot.identity()).expect("plain members"),
                );
                serde_json::to_writer(&mut out, &members).expect("a JSON value writes to memory")
            }
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
                // Every envelope names the snapshot it is from.
                out.extend_from_slice(b",\"snapshot\":");
                serde_json::to_writer(&mut out, &snapshot.identity())
                    .expect("a JSON value writes to memory");
                encode::json_warnings(&mut out, &self.warnings);
                out.push(b',');
                encode::json_str(&mut out, key);
                out.push(b':');
                self.json_rows(&mut out, snapshot, cells, false);
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

    /// The rows as a JSON array, or the first as an object (`object`).
    fn json_rows(
        &self,
        out: &mut Vec<u8>,
        snapshot: &Snapshot,
        cells: Option<&TableJsonCache>,
        object: bool,
    ) {
        match &self.rows {
            Rows::Table {
                domain,
                rows,
                columns,
            } => {
                let table = snapshot.table(*domain);
                match cells {
                    Some(cells) if !object => cells
                        .get(snapshot.generation, *domain, table)
                        .write_array(out, rows, columns),
                    _ => {
                        let frame = table.frame.select(rows, columns);
                        json_list(out, &frame, object);
                    }
                }
            }
            Rows::Frame(frame) => json_list(out, frame, object),
            Rows::Shared(frame) => json_list(out, frame, object),
            Rows::Groups { frame, by } => json_groups(out, frame, *by),
        }
    }
}

/// The rows of `frame` as a JSON array, or the first as an object (`object`).
fn json_list(out: &mut Vec<u8>, frame: &Frame, object: bool) {
    if object {
        encode::json_object(out, frame, 0);
    } else {
        encode::json_array(out, frame);
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

/// Groups as the toolkit's group_by shapes them: each its `key` (the bare
/// value for one field, an array for several, an empty array for none), then every column.
fn json_groups(out: &mut Vec<u8>, frame: &Frame, by: usize) {
    out.push(b'[');
    for r in 0..frame.num_rows() {
        if r > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"key\":");
        json_key(out, &frame.columns[..by], r);
        out.push(b',');
        encode::json_members(out, frame, r);
        out.push(b'}');
    }
    out.push(b']');
}

/// A group's key in row `r` of its columns `by`: the bare value of one, an array of several.
fn json_key(out: &mut Vec<u8>, by: &[FrameColumn], r: usize) {
    if let [col] = by {
        encode::json_cell_of(out, col, r);
        return;
    }
    out.push(b'[');
    for (i, col) in by.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        encode::json_cell_of(out, col, r);
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

/// How the door's answer goes out: whole (kept in the answer cache, or too cheap to keep), or
/// sent as it is made.
pub enum Reply {
    Whole(Arc<Encoded>),
    Sent(Sent),
}

impl Reply {
    /// The whole answer; none when it is sent as it is made (an answer of millions of rows,
    /// which only an HTTP response carries).
    pub fn whole(self) -> Option<Arc<Encoded>> {
        match self {
            Reply::Whole(e) => Some(e),
            Reply::Sent(_) => None,
        }
    }
}

/// An answer sent as it is made, never held whole: its headers' facts and its body.
pub struct Sent {
    pub content_type: &'static str,
    /// Rows (`X-Total-Count`).
    pub total: Option<usize>,
    pub warnings: Vec<String>,
    pub body: SentBody,
}

/// The body of a [`Sent`] answer.
pub enum SentBody {
    /// Pieces sharing memory held elsewhere (the derived data), sent one after the other.
    Pieces(Vec<Bytes>),
    /// Written while it is sent (on a blocking thread); an error cuts the body short.
    Written(Writer),
}

/// What writes a [`SentBody::Written`] body to its output.
pub type Writer = Box<dyn FnOnce(&mut (dyn std::io::Write + Send)) -> Result<(), String> + Send>;

/// The list of rows of a JSON answer in short: where it is, how many rows it has, and the cells
/// of its first rows' first members that hold no object or array (a table a front end shows).
#[derive(Debug)]
pub struct Head {
    /// The envelope's member holding the list; none when the answer is the bare list.
    pub key: Option<&'static str>,
    /// Rows of the list.
    pub rows: usize,
    /// The envelope's `total` member, if it has one and it is a count.
    pub total: Option<usize>,
    /// Members of a row.
    pub fields: usize,
    /// The first `HEAD_COLUMNS` members of the first row that hold no object or array.
    pub columns: Vec<String>,
    /// Their cells in each of the first `HEAD_ROWS` rows, row after row.
    pub cells: Vec<Cell>,
}

impl Head {
    /// About how much memory the head holds (a text's bytes are shared with the table).
    pub fn bytes(&self) -> usize {
        let names: usize = self.columns.iter().map(String::len).sum();
        names + self.cells.len() * std::mem::size_of::<Cell>()
    }
}

/// Rows of a [`Head`].
pub const HEAD_ROWS: usize = 10;
/// Columns of a [`Head`].
pub const HEAD_COLUMNS: usize = 8;

/// A cell of a [`Head`], as the JSON body has it.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(Arc<str>),
    /// A JSON value as the body writes it (an object, an array, or a JSON column's text).
    Json(Arc<str>),
}

/// A member of an answer's JSON rows: a column, or a group's `key` (the grouping columns' value:
/// the bare value of one, an array of several or none).
enum Source<'a> {
    Column(&'a FrameColumn),
    Key(&'a [FrameColumn]),
}

impl Source<'_> {
    fn name(&self) -> &str {
        match self {
            Source::Column(c) => &c.name,
            Source::Key(_) => "key",
        }
    }

    /// The one column the member's value is of; none for a key of several columns (an array).
    fn column(&self) -> Option<&FrameColumn> {
        match *self {
            Source::Column(col) | Source::Key([col]) => Some(col),
            Source::Key(_) => None,
        }
    }

    /// Whether the member's JSON value in row `r` is an object or an array.
    fn nests(&self, r: usize) -> bool {
        let Some(col) = self.column() else {
            return true;
        };
        match &col.data {
            ColumnData::Struct { valid, .. } => valid.get(r).copied().unwrap_or(false),
            ColumnData::Json(v) => v
                .get(r)
                .and_then(Option::as_deref)
                .is_some_and(|t| t.trim_start().starts_with(['{', '['])),
            _ => false,
        }
    }

    /// The member's value in row `r`.
    fn cell(&self, r: usize) -> Cell {
        let Some(col) = self.column() else {
            return Cell::Json(self.json(r).into());
        };
        match &col.data {
            ColumnData::Str(v) => v[r].clone().map_or(Cell::Null, Cell::Text),
            ColumnData::Json(v) => v[r].clone().map_or(Cell::Null, Cell::Json),
            ColumnData::Int(v) => v[r].map_or(Cell::Null, Cell::Int),
            ColumnData::Float(v) => v[r]
                .filter(|x| x.is_finite())
                .map_or(Cell::Null, Cell::Float),
            ColumnData::Bool(v) => v[r].map_or(Cell::Null, Cell::Bool),
            ColumnData::Struct { .. } if self.nests(r) => Cell::Json(self.json(r).into()),
            ColumnData::Struct { .. } => Cell::Null,
        }
    }

    /// The member's value in row `r` as JSON text.
    fn json(&self, r: usize) -> String {
        let mut out = Vec::new();
        match *self {
            Source::Column(col) => encode::json_cell_of(&mut out, col, r),
            Source::Key(by) => json_key(&mut out, by, r),
        }
        String::from_utf8(out).expect("JSON is UTF-8")
    }
}
