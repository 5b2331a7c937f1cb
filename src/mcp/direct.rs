//! A `tools/call` of a door question (`Kind::Ask`) answered without rmcp: the result is written
//! straight from the door's JSON answer, which is the structured content as it stands, beside the
//! text table made from the head of its list of rows (`Encoded::head`, the first rows the door
//! wrote beside the body). Through rmcp the same answer is parsed into a `serde_json::Value`,
//! turned into a table and written out again, for every call.
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
use serde_json::{Map, Value};

use super::catalog::Kind;
use super::server::McpServer;
use super::text;
use crate::service::ask::{Encoded, Head};

/// Protocol versions whose `tools/call` rmcp takes with no check beyond the header naming a known
/// version. Later versions carry standard headers (`Mcp-Method`, `Mcp-Name`) that rmcp checks
/// against the body: their calls go to rmcp.
const VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Whether `call` (a JSON-RPC message, sent with `headers`) is a plain `tools/call`: JSON sent,
/// JSON and event streams accepted, a version of `VERSIONS` named, an integer or text id, and
/// nothing in the message or its parameters but the tool's name and arguments.
pub(super) fn plain(headers: &HeaderMap, call: &Map<String, Value>) -> bool {
    let accepts = |media: &str| {
        headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|m| {
                m.split(';')
                    .next()
                    .is_some_and(|e| e.trim().eq_ignore_ascii_case(media))
            })
    };
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
    /// id (`,"result":{…}}`), in pieces (the door's body among them, shared, not copied); none
    /// when the tool is not the door's or its answer is not a page of rows, which rmcp's path
    /// answers instead.
    pub(super) async fn direct(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Option<Vec<Bytes>> {
        let spec = self.tools.iter().find(|t| t.name == name)?;
        let Kind::Ask(question, path, wrap) = spec.kind else {
            return None;
        };
        let started = Instant::now();
        let answer = self.ask_tool(spec, question, path, arguments).await.ok()?;
        let tail = result(&answer, wrap)?;
        self.metrics.tool_call(spec.name, "ok", started.elapsed());
        Some(tail)
    }
}

/// The tool result of the door's JSON answer: a bare list wrapped under `wrap` with its count,
/// or an envelope with a list of rows, as the structured content; the text `server::rows_result`
/// makes, from the head of the list (`Encoded::head`) rather than from the body. In three pieces:
/// what comes before the body, the body (the door's, shared), what comes after it.
fn result(answer: &Encoded, wrap: &str) -> Option<Vec<Bytes>> {
    let head = answer.head.as_ref()?;
    let trimmed = answer.body.trim_ascii();
    let start = trimmed.as_ptr() as usize - answer.body.as_ptr() as usize;
    let body = answer.body.slice(start..start + trimmed.len());
    // A bare list is wrapped under `wrap`, with its count; an envelope is the content as it is.
    let (list, warnings) = match head.key {
        None => (wrap, &[][..]),
        Some(key) => (key, answer.warnings.as_slice()),
    };
    if !matches!(list, "runs" | "groups" | "fits" | "rows") {
        return None;
    }
    // An empty list because a filter matched nothing is a refusal (`server::no_match`); an empty
    // list of another name is shown as fields, not as a table.
    let named = matches!(list, "runs" | "groups");
    if head.rows == 0 && (!named || !warnings.is_empty()) {
        return None;
    }
    let shown = shown(head);
    let total = head.total.map(|n| n as u64);
    let mut t = text::table_of(shown.as_ref(), head.rows, total);
    for w in warnings {
        t.push_str(&format!("warning: {w}\n"));
    }
    let mut before = Vec::with_capacity(wrap.len() + t.len() + 96);
    before.extend_from_slice(b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":");
    serde_json::to_writer(&mut before, &t).ok()?;
    before.extend_from_slice(b"}],\"structuredContent\":");
    let mut after = Vec::with_capacity(48);
    if head.key.is_none() {
        before.push(b'{');
        serde_json::to_writer(&mut before, wrap).ok()?;
        before.push(b':');
        after.extend_from_slice(format!(",\"count\":{}}}", head.rows).as_bytes());
    }
    after.extend_from_slice(b",\"isError\":false}}");
    Some(vec![before.into(), body, after.into()])
}

/// The head's cells as the text table shows them; none when the list is empty.
fn shown(head: &Head) -> Option<text::Shown<'_>> {
    (head.rows > 0).then_some(text::Shown {
        fields: head.fields,
        columns: &head.columns,
        cells: &head.cells,
    })
}
