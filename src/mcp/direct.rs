//! A `tools/call` of a door question (`Kind::Ask`) answered without rmcp: the result is written
//! straight from the door's JSON answer, which is the structured content as it stands, beside the
//! text table made from the first rows alone. Through rmcp the same answer is parsed into a
//! `serde_json::Value`, turned into a table and written out again, for every call.
//!
//! Only a plain call is taken (`plain`): the headers and body rmcp takes without further checks
//! for the protocol versions before the standard headers, a tool of the door's, and an answer
//! that is a page of rows. Anything else (another version, a refusal, a filter that matches
//! nothing, another shape) goes to rmcp, which answers it as it always has. The result is the
//! one rmcp writes; `--plain mcp-direct` switches this path off (`tests/it/machinery.rs` checks
//! both answer the same).

use std::time::Instant;

use axum::http::{HeaderMap, header};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::catalog::Kind;
use super::server::McpServer;
use super::text::{self, TABLE_ROWS};

/// Protocol versions whose `tools/call` rmcp takes with no check beyond the header naming a known
/// version. Later versions carry standard headers (`Mcp-Method`, `Mcp-Name`) that rmcp checks
/// against the body: their calls go to rmcp.
const VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Whether `call` (a JSON-RPC message, sent with `headers`) is a plain `tools/call`: JSON sent,
/// JSON and event streams accepted, a version of `VERSIONS` named, an integer or text id, and
/// nothing in the message or its parameters but the tool's name and arguments.
pub(super) fn plain(headers: &HeaderMap, call: &Map<String, Value>) -> bool {
    let header = |name| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
            .join(",")
    };
    let accepted = header(header::ACCEPT);
    let media: Vec<&str> = accepted
        .split(',')
        .map(|m| m.split(';').next().unwrap_or("").trim())
        .collect();
    let accepts = |m: &str| media.iter().any(|x| x.eq_ignore_ascii_case(m));
    let sends_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
        });
    let version = headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| VERSIONS.contains(&v));
    let message = call
        .keys()
        .all(|k| matches!(k.as_str(), "jsonrpc" | "id" | "method" | "params"))
        && call.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && call.get("method").and_then(Value::as_str) == Some("tools/call")
        && call
            .get("id")
            .is_some_and(|id| id.is_string() || id.is_i64());
    let params = call
        .get("params")
        .and_then(Value::as_object)
        .is_some_and(|p| {
            p.keys().all(|k| k == "name" || k == "arguments")
                && p.get("name").is_some_and(Value::is_string)
                && p.get("arguments").is_none_or(Value::is_object)
        });
    accepts("application/json")
        && accepts("text/event-stream")
        && sends_json
        && version
        && message
        && params
}

impl McpServer {
    /// The result of a call of the door's tool `name`, as the JSON-RPC answer has it after the
    /// id (`,"result":{…}}`); none when the tool is not the door's or its answer is not a page of
    /// rows, which rmcp's path answers instead.
    pub(super) async fn direct(&self, name: &str, arguments: Map<String, Value>) -> Option<Bytes> {
        let spec = self.tools.iter().find(|t| t.name == name)?;
        let Kind::Ask(question, path, wrap) = spec.kind else {
            return None;
        };
        let started = Instant::now();
        let answer = self.ask_tool(spec, question, path, arguments).await.ok()?;
        let tail = result(answer.body.trim_ascii(), wrap)?;
        self.metrics.tool_call(spec.name, "ok", started.elapsed());
        Some(tail)
    }
}

/// A page of rows as the door writes it: the first list of rows of `runs`, `groups`, `fits` and
/// `rows`, the total and the warnings; other members are skipped unread.
#[derive(Deserialize)]
struct Page<'a> {
    #[serde(borrow, default)]
    runs: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    groups: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    fits: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    rows: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    total: Option<Value>,
    #[serde(default)]
    warnings: Option<Vec<Value>>,
}

/// The tool result of the door's JSON answer `body`: a list wrapped under `wrap` with its count,
/// or an object with a list of rows. Its text is the one `server::rows_result` makes.
fn result(body: &[u8], wrap: &str) -> Option<Bytes> {
    let (page, structured) = if body.first() == Some(&b'[') {
        let rows: Vec<&RawValue> = serde_json::from_slice(body).ok()?;
        let mut structured = serde_json::to_vec(wrap).ok()?;
        structured.insert(0, b'{');
        structured.push(b':');
        structured.extend_from_slice(body);
        structured.extend_from_slice(format!(",\"count\":{}}}", rows.len()).as_bytes());
        let mut page = Page {
            runs: None,
            groups: None,
            fits: None,
            rows: None,
            total: None,
            warnings: None,
        };
        match wrap {
            "runs" => page.runs = Some(rows),
            "groups" => page.groups = Some(rows),
            "fits" => page.fits = Some(rows),
            "rows" => page.rows = Some(rows),
            _ => return None,
        }
        (page, structured)
    } else {
        (serde_json::from_slice(body).ok()?, body.to_vec())
    };
    // A list found empty because a filter matched nothing is a refusal, `server::no_match`'s.
    let warnings: Vec<&str> = page
        .warnings
        .iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let empty = |l: &Option<Vec<&RawValue>>| l.as_ref().is_some_and(Vec::is_empty);
    if !warnings.is_empty() && (empty(&page.runs) || empty(&page.groups)) {
        return None;
    }
    let named = page.runs.is_some() || page.groups.is_some();
    let rows = [&page.runs, &page.groups, &page.fits, &page.rows]
        .into_iter()
        .find_map(Option::as_ref)
        .map_or(&[][..], Vec::as_slice);
    if rows.is_empty() && !named {
        return None;
    }
    let head: Vec<Value> = rows
        .iter()
        .take(TABLE_ROWS)
        .map(|r| serde_json::from_str(r.get()))
        .collect::<Result<_, _>>()
        .ok()?;
    let total = page.total.as_ref().and_then(Value::as_u64);
    let mut t = text::table_of(&head, rows.len(), total);
    for w in page.warnings.iter().flatten() {
        t.push_str(&format!("warning: {}\n", w.as_str().unwrap_or("")));
    }
    let mut out = Vec::with_capacity(structured.len() + t.len() + 96);
    out.extend_from_slice(b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":");
    serde_json::to_writer(&mut out, &t).ok()?;
    out.extend_from_slice(b"}],\"structuredContent\":");
    out.extend_from_slice(&structured);
    out.extend_from_slice(b",\"isError\":false}}");
    Some(out.into())
}
