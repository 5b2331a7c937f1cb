//! The MCP reference in Markdown (`docs/reference/mcp.md`), generated from the declarations
//! `tools/list`, `resources/list` and `prompts/list` answer from: each tool with its
//! description and arguments (their JSON Schema in words), the resources and the prompts. A test
//! (`tests/it/reference.rs`) fails when the committed page differs from what this writes.

use std::fmt::Write as _;

use serde_json::Value;

use super::catalog::tools;
use super::server::{RESOURCES, prompts};
use crate::http::reference::{anchor, cell, generated_note};

/// A value's JSON Schema in words; a choice among many names is counted, not listed (the
/// tool's schema lists them).
fn takes(schema: &Value) -> String {
    if let Some(options) = schema["anyOf"].as_array() {
        let each: Vec<String> = options.iter().map(takes).collect();
        return each.join(", or ");
    }
    if let Some(words) = schema["enum"].as_array() {
        let words: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
        return if words.len() <= 8 {
            format!(
                "one of {}",
                words
                    .iter()
                    .map(|w| format!("`{w}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            format!("one of {} names", words.len())
        };
    }
    match schema["type"].as_str() {
        Some("array") => format!("a list, each {}", takes(&schema["items"])),
        Some("integer") => match (schema["minimum"].as_u64(), schema["maximum"].as_u64()) {
            (Some(lo), Some(hi)) => format!("an integer from {lo} to {hi}"),
            (Some(lo), None) => format!("an integer ≥ {lo}"),
            _ => "an integer".into(),
        },
        Some("number") => match schema["minimum"].as_f64() {
            Some(lo) => format!("a number ≥ {lo}"),
            None => "a number".into(),
        },
        Some("boolean") => "`true` or `false`".into(),
        Some("string") => match schema["pattern"].as_str() {
            Some(p) if p.len() <= 60 => format!("a string (`{p}`)"),
            // Long patterns spell out a list of names (sort keys): the schema holds them.
            Some(_) => "a string of the pattern in the tool's schema".into(),
            None => "a string".into(),
        },
        Some(other) => format!("a {other}"),
        None => "any value".into(),
    }
}

/// `docs/reference/mcp.md`.
pub fn mcp_markdown() -> String {
    let tools = tools();
    let mut out = String::from("# MCP reference\n\n");
    out.push_str(&generated_note(
        "the tools', resources' and prompts' declarations (`mcp::catalog`, `mcp::server`)",
    ));
    out.push_str(
        "\nWhat `/mcp` lists: every tool with its arguments (a tool's arguments are its REST operation's query \
         parameters, from the same declarations, and the few it takes itself), the resources and the prompts. \
         How to connect and what the answers are: [the MCP guide](../mcp.md).\n\n## Tools\n\n",
    );
    for t in &tools {
        writeln!(out, "- [`{}`](#{}): {}", t.name, anchor(t.name), t.title).unwrap();
    }
    for t in &tools {
        write!(
            out,
            "\n### {}\n\n**{}.** {}\n",
            t.name, t.title, t.description
        )
        .unwrap();
        let schema = t.input_schema();
        let props = schema.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match props {
            Some(props) if !props.is_empty() => {
                out.push_str("\n| Argument | Takes | Meaning |\n|---|---|---|\n");
                for (name, s) in props {
                    let mut meaning = s["description"].as_str().unwrap_or_default().to_string();
                    if required.contains(&name.as_str()) {
                        meaning = format!("**Required.** {meaning}");
                    }
                    writeln!(
                        out,
                        "| `{name}` | {} | {} |",
                        cell(&takes(s)),
                        cell(&meaning)
                    )
                    .unwrap();
                }
            }
            _ => out.push_str("\nNo arguments.\n"),
        }
    }
    out.push_str("\n## Resources\n\n| URI | Name | What |\n|---|---|---|\n");
    for (uri, name, what) in RESOURCES {
        writeln!(out, "| `{uri}` | {name} | {} |", cell(what)).unwrap();
    }
    out.push_str("\n## Prompts\n");
    for p in prompts() {
        write!(
            out,
            "\n### {}\n\n{}\n\n| Argument | Required | Meaning |\n|---|---|---|\n",
            p.name,
            p.description.as_deref().unwrap_or_default()
        )
        .unwrap();
        for a in p.arguments.iter().flatten() {
            writeln!(
                out,
                "| `{}` | {} | {} |",
                a.name,
                if a.required == Some(true) { "yes" } else { "" },
                cell(a.description.as_deref().unwrap_or_default())
            )
            .unwrap();
        }
    }
    out
}
