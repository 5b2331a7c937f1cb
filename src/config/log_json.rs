//! `--log-format json`: one JSON object per line, written straight into the line's buffer.
//!
//! The lines have the keys and values of tracing-subscriber's JSON format (`timestamp`, `level`,
//! `fields`, `target`, and `span` and `spans` inside a span), so a log pipeline reads them as it
//! did. That format keeps a span's fields as a JSON object in text and, for every line logged
//! inside the span, parses it back into a map to write it again, twice (`span` and `spans`),
//! which, with an access line per request, cost every request server CPU. Here a span keeps its
//! fields as the inside of an object (`"method":"GET",...`), which a line copies as it is; an
//! event's fields are written as they are visited.

use std::fmt::{self, Write};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_log::NormalizeEvent;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::{LookupSpan, SpanRef};

/// A line's format: the event's fields, its target, and the spans it was logged in.
pub struct JsonLines;

/// A span's fields as the members of a JSON object, without its braces. A field recorded again
/// later (`Span::record`) is appended, not replaced: the object then names it twice, and readers
/// take the last value (tracing-subscriber's format replaced it; the service records no span field
/// twice).
pub struct JsonMembers;

impl<'writer> FormatFields<'writer> for JsonMembers {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        let mut members = Members::new(&mut writer, true);
        fields.record(&mut members);
        members.result
    }

    fn add_fields(
        &self,
        current: &'writer mut FormattedFields<Self>,
        fields: &tracing::span::Record<'_>,
    ) -> fmt::Result {
        let first = current.fields.is_empty();
        let mut members = Members::new(&mut current.fields, first);
        fields.record(&mut members);
        members.result
    }
}

impl<S> FormatEvent<S, JsonMembers> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, JsonMembers>,
        mut out: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        // A `log` record's own target, not the bridge's `log`.
        let normalized = event.normalized_metadata();
        let meta = normalized.as_ref().unwrap_or_else(|| event.metadata());
        out.write_str("{\"timestamp\":\"")?;
        SystemTime.format_time(&mut out)?;
        write!(out, "\",\"level\":\"{}\",\"fields\":{{", meta.level())?;
        let mut members = Members::new(&mut out, true);
        event.record(&mut members);
        members.result?;
        out.write_str("},\"target\":")?;
        string(&mut out, meta.target())?;
        let current = event
            .parent()
            .and_then(|id| ctx.span(id))
            .or_else(|| ctx.lookup_current());
        if let Some(current) = current {
            out.write_str(",\"span\":")?;
            span(&mut out, &current)?;
            out.write_str(",\"spans\":[")?;
            for (i, s) in current.scope().from_root().enumerate() {
                if i > 0 {
                    out.write_char(',')?;
                }
                span(&mut out, &s)?;
            }
            out.write_char(']')?;
        }
        out.write_str("}\n")
    }
}

/// A span as an object: its fields, then its `name`.
fn span<S>(out: &mut impl Write, span: &SpanRef<'_, S>) -> fmt::Result
where
    S: for<'a> LookupSpan<'a>,
{
    out.write_char('{')?;
    let ext = span.extensions();
    let fields = ext
        .get::<FormattedFields<JsonMembers>>()
        .map(|f| f.fields.as_str())
        .unwrap_or("");
    out.write_str(fields)?;
    if !fields.is_empty() {
        out.write_char(',')?;
    }
    out.write_str("\"name\":")?;
    string(out, span.metadata().name())?;
    out.write_char('}')
}

/// Writes visited fields as `"name":value` members, comma-separated.
struct Members<'a, W: Write> {
    out: &'a mut W,
    first: bool,
    result: fmt::Result,
}

impl<'a, W: Write> Members<'a, W> {
    /// Members written after what `out` holds: `first` when it holds none yet.
    fn new(out: &'a mut W, first: bool) -> Self {
        Members {
            out,
            first,
            result: Ok(()),
        }
    }

    fn member(&mut self, field: &Field, value: impl FnOnce(&mut W) -> fmt::Result) {
        if self.result.is_err() {
            return;
        }
        self.result = (|| {
            if !self.first {
                self.out.write_char(',')?;
            }
            self.first = false;
            string(self.out, field.name())?;
            self.out.write_char(':')?;
            value(self.out)
        })();
    }
}

impl<W: Write> Visit for Members<'_, W> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.member(field, |out| string(out, value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.member(field, |out| {
            out.write_char('"')?;
            write!(Escaped(out), "{value:?}")?;
            out.write_char('"')
        });
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.member(field, |out| write!(out, "{value}"));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.member(field, |out| write!(out, "{value}"));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.member(field, |out| write!(out, "{value}"));
    }

    /// As serde_json writes a float: shortest round-trip digits, `null` for NaN and infinities.
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.member(field, |out| match serde_json::Number::from_f64(value) {
            Some(n) => write!(out, "{n}"),
            None => out.write_str("null"),
        });
    }
}

/// `text` as a JSON string.
fn string(out: &mut impl Write, text: &str) -> fmt::Result {
    out.write_char('"')?;
    Escaped(out).write_str(text)?;
    out.write_char('"')
}

/// Escapes what is written through it for the inside of a JSON string (RFC 8259, section 7):
/// the quote, the backslash and the control characters; runs of other characters are copied as
/// they are.
struct Escaped<'a, W: Write>(&'a mut W);

impl<W: Write> Write for Escaped<'_, W> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let mut start = 0;
        for (i, b) in text.bytes().enumerate() {
            let short = match b {
                b'"' => Some("\\\""),
                b'\\' => Some("\\\\"),
                b'\n' => Some("\\n"),
                b'\r' => Some("\\r"),
                b'\t' => Some("\\t"),
                0x08 => Some("\\b"),
                0x0c => Some("\\f"),
                0..=0x1f => None,
                _ => continue,
            };
            self.0.write_str(&text[start..i])?;
            match short {
                Some(escape) => self.0.write_str(escape)?,
                None => write!(self.0, "\\u{b:04x}")?,
            }
            start = i + 1;
        }
        self.0.write_str(&text[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek};
    use std::sync::Arc;

    /// The lines that `log` writes in the given format, each parsed, with its timestamp checked and
    /// removed. They go to a temporary file: tracing-subscriber writes to an `Arc<File>` itself.
    fn logged<E, N>(event_format: E, fields: N, log: impl Fn()) -> Vec<serde_json::Value>
    where
        E: FormatEvent<tracing_subscriber::Registry, N> + Send + Sync + 'static,
        N: for<'a> FormatFields<'a> + Send + Sync + 'static,
    {
        let file = Arc::new(tempfile::tempfile().unwrap());
        let subscriber = tracing_subscriber::fmt()
            .with_writer(file.clone())
            .with_ansi(false)
            .fmt_fields(fields)
            .event_format(event_format)
            .finish();
        tracing::subscriber::with_default(subscriber, log);
        let (mut text, mut file) = (String::new(), &*file);
        file.rewind().unwrap();
        file.read_to_string(&mut text).unwrap();
        text.lines()
            .map(|line| {
                let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
                let t = v
                    .as_object_mut()
                    .unwrap()
                    .shift_remove("timestamp")
                    .unwrap();
                let t = t.as_str().unwrap();
                assert!(
                    t.len() == 27 && t.ends_with('Z') && t.as_bytes()[10] == b'T',
                    "{t}"
                );
                v
            })
            .collect()
    }

    fn events() {
        tracing::info!(
            addr = "127.0.0.1:80",
            runs = 838_u64,
            delta = -3_i64,
            ok = true,
            "listening"
        );
        let span =
            tracing::info_span!("request", method = %"GET", uri = %"/v1/runs?q=\"a\"\\b", n = 2.5);
        span.in_scope(|| {
            let inner = tracing::warn_span!("inner");
            inner.in_scope(|| {
                tracing::warn!(
                    ratio = f64::NAN,
                    tab = "a\tb\u{1}",
                    big = 1e300,
                    "slow {}",
                    7
                )
            });
        });
    }

    #[test]
    fn lines_have_the_json_formats_members() {
        let ours = logged(JsonLines, JsonMembers, events);
        assert_eq!(
            ours[0],
            serde_json::json!({
                "level": "INFO",
                "fields": {"message": "listening", "addr": "127.0.0.1:80", "runs": 838, "delta": -3, "ok": true},
                "target": "mlenergy_server::config::log_json::tests",
            })
        );
        let request = serde_json::json!({"method": "GET", "uri": "/v1/runs?q=\"a\"\\b", "n": 2.5, "name": "request"});
        assert_eq!(
            ours[1],
            serde_json::json!({
                "level": "WARN",
                "fields": {"message": "slow 7", "ratio": null, "tab": "a\tb\u{1}", "big": 1e300},
                "target": "mlenergy_server::config::log_json::tests",
                "span": {"name": "inner"},
                "spans": [request, {"name": "inner"}],
            })
        );
        assert_eq!(ours.len(), 2);
        // The same members and values as tracing-subscriber's JSON format.
        let theirs = logged(
            tracing_subscriber::fmt::format().json(),
            tracing_subscriber::fmt::format::JsonFields::new(),
            events,
        );
        assert_eq!(ours, theirs);
    }
    #[test]
    fn escapes_what_json_strings_cannot_hold() {
        let mut s = String::new();
        string(&mut s, "a\"b\\c\nd\u{7}é\u{1f}").unwrap();
        assert_eq!(s, r#""a\"b\\c\nd\u0007é\u001f""#);
        assert_eq!(
            serde_json::from_str::<String>(&s).unwrap(),
            "a\"b\\c\nd\u{7}é\u{1f}"
        );
    }
}
