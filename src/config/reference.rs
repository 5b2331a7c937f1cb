//! The command line's reference in Markdown (`docs/reference/flags.md`), generated from the
//! same declarations `--help` prints: each command's options with their environment variable,
//! default, values and help. A test (`tests/it/reference.rs`) fails when the committed page
//! differs from what this writes.

use std::fmt::Write as _;

use clap::{Arg, Command, CommandFactory};

use super::Cli;
use super::entry::LOG_FILTER_VARS;
use crate::http::reference::{anchor, cell, generated_note};

fn flag(arg: &Arg) -> String {
    let value = arg
        .get_value_names()
        .map(|names| names.iter().map(|n| format!(" <{n}>")).collect::<String>())
        .unwrap_or_default();
    match (arg.get_long(), arg.get_short()) {
        (Some(long), _) if arg.get_action().takes_values() => format!("`--{long}{value}`"),
        (Some(long), _) => format!("`--{long}`"),
        (None, Some(short)) => format!("`-{short}`"),
        (None, None) => format!("`{}`", value.trim()),
    }
}

fn help(arg: &Arg) -> String {
    let mut text = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| match v.get_help() {
            Some(h) => format!("`{}`: {}", v.get_name(), h),
            None => format!("`{}`", v.get_name()),
        })
        .collect();
    // A flag's possible values are `true` and `false`, which say nothing.
    if !values.is_empty() && arg.get_action().takes_values() {
        if !text.ends_with('.') {
            text.push('.');
        }
        write!(text, " Values: {}.", values.join("; ")).unwrap();
    }
    text
}

fn shown(arg: &Arg) -> bool {
    !arg.is_hide_set() && !matches!(arg.get_id().as_str(), "help" | "version")
}

/// One command's options as a table per help heading, positional arguments first.
fn options(out: &mut String, cmd: &Command, level: &str) {
    let args: Vec<&Arg> = cmd.get_arguments().filter(|a| shown(a)).collect();
    let mut headings: Vec<Option<&str>> = Vec::new();
    for a in &args {
        let h = if a.is_positional() {
            Some("Arguments")
        } else {
            a.get_help_heading()
        };
        if !headings.contains(&h) {
            headings.push(h);
        }
    }
    headings.sort_by_key(|h| *h != Some("Arguments"));
    for h in headings {
        if let Some(h) = h {
            write!(out, "\n{level} {h}\n").unwrap();
        }
        out.push_str("\n| Option | Environment | Default | Meaning |\n|---|---|---|---|\n");
        for a in args.iter().filter(|a| {
            let ah = if a.is_positional() {
                Some("Arguments")
            } else {
                a.get_help_heading()
            };
            ah == h
        }) {
            let env = a
                .get_env()
                .map(|e| format!("`{}`", e.to_string_lossy()))
                .unwrap_or_default();
            let default = a
                .get_default_values()
                .iter()
                .map(|v| format!("`{}`", v.to_string_lossy()))
                .collect::<Vec<_>>()
                .join(", ");
            let default = if a.get_action().takes_values() {
                default
            } else {
                String::new()
            };
            writeln!(
                out,
                "| {} | {env} | {default} | {} |",
                flag(a),
                cell(&help(a))
            )
            .unwrap();
        }
    }
}

/// `docs/reference/flags.md`.
pub fn flags_markdown() -> String {
    let cmd = Cli::command();
    let mut out = String::from("# Command line\n\n");
    out.push_str(&generated_note(
        "the command line's declarations (`config`), what `--help` prints",
    ));
    write!(
        out,
        "\n`{name}` with no command serves (`serve`'s options below); `{name} COMMAND --help` prints a command's \
         options. Every option with an environment variable also reads it (the flag wins). How the options fit \
         together: [running it](../running.md).\n\n",
        name = cmd.get_name()
    )
    .unwrap();
    let commands: Vec<&Command> = cmd.get_subcommands().filter(|c| !c.is_hide_set()).collect();
    for c in &commands {
        let title = format!("{} {}", cmd.get_name(), c.get_name());
        writeln!(
            out,
            "- [`{title}`](#{}): {}",
            anchor(&title),
            c.get_about().map(|a| a.to_string()).unwrap_or_default()
        )
        .unwrap();
    }
    for c in commands {
        write!(
            out,
            "\n## {} {}\n\n{}\n",
            cmd.get_name(),
            c.get_name(),
            c.get_long_about()
                .or(c.get_about())
                .map(|a| a.to_string())
                .unwrap_or_default()
        )
        .unwrap();
        options(&mut out, c, "###");
        if c.get_name() == "serve" {
            write!(
                out,
                "\n### Environment only\n\n| Variable | Meaning |\n|---|---|\n| {} | the log filter (`tracing`'s \
                 env-filter syntax, e.g. `debug` or `info,mlenergy_server=debug`): the first one set, else `info` |\n",
                LOG_FILTER_VARS.map(|v| format!("`{v}`")).join(", ")
            )
            .unwrap();
        }
    }
    out
}
