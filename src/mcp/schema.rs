//! A tool's arguments: their JSON Schema, generated from the parameter catalog the REST parser and
//! the OpenAPI document use (`ask::parameter_specs`), and their translation into the query of
//! the REST operation the tool calls. What a query writes as text (comma-separated lists, `true`)
//! a tool takes as JSON (arrays, numbers, booleans).

use serde_json::{Map, Value, json};

use crate::http::openapi::alternatives;
use crate::service::ask::{ParamSpec, ValueKind};

/// One argument of a tool: its name, what the schema says of it, and how its value is written
/// into the query.
#[derive(Debug, Clone)]
pub(super) struct Arg {
    pub(super) name: String,
    pub(super) schema: Value,
    /// Strings are repeated as parameters (a value may hold a comma); other lists are joined by
    /// commas.
    pub(super) repeat: bool,
}

/// The JSON Schema of a value of `kind`, with `description`.
fn value_schema(kind: &ValueKind) -> Value {
    let enum_strings = |names: &[String]| json!({"type": "string", "enum": names});
    match kind {
        ValueKind::Strings => json!({
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]
        }),
        ValueKind::Numbers => json!({
            "anyOf": [{"type": "number"}, {"type": "array", "items": {"type": "number"}, "minItems": 1}]
        }),
        ValueKind::Number => json!({"type": "number"}),
        ValueKind::Choice(words) => enum_strings(words),
        ValueKind::Flag => json!({"type": "boolean"}),
        ValueKind::Count(max) => json!({"type": "integer", "minimum": 0, "maximum": max}),
        ValueKind::FieldList(names) | ValueKind::NumericFields(names) => {
            json!({"type": "array", "items": enum_strings(names)})
        }
        ValueKind::SortKeys(names) => json!({
            "type": "array",
            "items": {"type": "string", "pattern": format!("^-?(?:{})$", alternatives(names))}
        }),
        ValueKind::Aggregates { fields, numeric } => {
            let funcs: Vec<String> = crate::engine::AggFunc::NAMES
                .iter()
                .map(|s| s.to_string())
                .collect();
            json!({
                "type": "array",
                "minItems": 1,
                "items": {"type": "string", "pattern": format!(
                    "^(?:(?:{f})|count\\((?:{all})\\)|(?:{f})\\((?:{num})\\))$",
                    f = alternatives(&funcs),
                    all = alternatives(fields),
                    num = alternatives(numeric),
                )}
            })
        }
        ValueKind::Duration => {
            json!({"type": "string", "pattern": "^[1-9][0-9]{0,5}(?:ms|s|m|h)$"})
        }
        ValueKind::PositiveNumbers => json!({
            "type": "array", "items": {"type": "number", "exclusiveMinimum": 0}
        }),
        ValueKind::CountOrAll => json!({
            "anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "enum": ["all"]}]
        }),
        ValueKind::NumericField(names) => enum_strings(names),
        ValueKind::NonNegative => json!({"type": "number", "minimum": 0}),
        ValueKind::Fraction => json!({"type": "number", "minimum": 0, "maximum": 0.5}),
        ValueKind::Revision => {
            json!({"type": "string", "pattern": crate::service::ask::declare::REVISION_PATTERN})
        }
    }
}

/// The arguments of `specs`: the canonical parameters (the catalog lists aliases after `format`,
/// and a tool always answers JSON, so both are left out).
pub(super) fn args_of(specs: Vec<ParamSpec>) -> Vec<Arg> {
    specs
        .into_iter()
        .take_while(|s| s.name != "format")
        .map(|s| arg(&s.name, &s.description, &s.value))
        .collect()
}

/// One argument from its catalog entry.
pub(super) fn arg(name: &str, description: &str, kind: &ValueKind) -> Arg {
    let mut schema = value_schema(kind);
    if !description.is_empty() {
        schema["description"] = Value::String(description.to_string());
    }
    Arg {
        name: name.to_string(),
        schema,
        repeat: matches!(kind, ValueKind::Strings),
    }
}

/// The arguments both domains' catalogs give, merged by name: a list of field names becomes the
/// union of both (the REST parser refuses, naming the allowed ones, a field the chosen domain
/// lacks), and an argument one domain lacks says so.
pub(super) fn merge_domains(llm: Vec<Arg>, diffusion: Vec<Arg>) -> Vec<Arg> {
    let mut out = llm.clone();
    for a in &mut out {
        match diffusion.iter().find(|d| d.name == a.name) {
            Some(d) => union_enums(&mut a.schema, &d.schema),
            None => note(&mut a.schema, "LLM runs only."),
        }
    }
    for d in diffusion {
        if !llm.iter().any(|a| a.name == d.name) {
            let mut d = d;
            note(&mut d.schema, "Diffusion runs only.");
            out.push(d);
        }
    }
    out
}

fn note(schema: &mut Value, text: &str) {
    let before = schema["description"].as_str().unwrap_or("").to_string();
    schema["description"] = Value::String(if before.is_empty() {
        text.to_string()
    } else {
        format!("{before} {text}")
    });
}

/// `a`'s `enum` lists (at any depth) extended with the values of `b`'s at the same place.
fn union_enums(a: &mut Value, b: &Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a.iter_mut() {
                let Some(vb) = b.get(k) else { continue };
                if k == "enum" {
                    if let (Value::Array(xs), Value::Array(ys)) = (va, vb) {
                        for y in ys {
                            if !xs.contains(y) {
                                xs.push(y.clone());
                            }
                        }
                    }
                } else if k == "pattern" {
                    // Sort keys and aggregates: either domain's pattern (the parser checks the
                    // chosen domain's).
                    if let (Value::String(pa), Value::String(pb)) = (&*va, vb)
                        && pa != pb
                    {
                        *va = Value::String(format!("(?:{pa})|(?:{pb})"));
                    }
                } else {
                    union_enums(va, vb);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (x, y) in a.iter_mut().zip(b) {
                union_enums(x, y);
            }
        }
        _ => {}
    }
}

/// The dialect of every schema a tool declares (MCP's default, said explicitly).
pub(super) const JSON_SCHEMA: &str = "https://json-schema.org/draft/2020-12/schema";

/// An object schema over `args` (none required unless listed), closed to other names.
pub(super) fn object_schema(args: &[Arg], required: &[&str]) -> Map<String, Value> {
    let properties: Map<String, Value> = args
        .iter()
        .map(|a| (a.name.clone(), a.schema.clone()))
        .collect();
    let mut m = Map::new();
    m.insert("$schema".into(), json!(JSON_SCHEMA));
    m.insert("type".into(), json!("object"));
    m.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        m.insert("required".into(), json!(required));
    }
    m.insert("additionalProperties".into(), json!(false));
    m
}

/// A refused argument: the parameter it names and why (the tool error says both).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ArgError {
    pub(super) parameter: String,
    pub(super) detail: String,
    pub(super) allowed: Vec<String>,
}

/// The query string of `given` under `args` (url-encoded, in the order given). A name no argument
/// has, and a value of a JSON type the argument cannot take, are refused here, naming the
/// parameter; the values themselves are checked by the REST parser, which names what it allows.
pub(super) fn query(args: &[Arg], given: &Map<String, Value>) -> Result<String, ArgError> {
    let mut q = form_urlencoded::Serializer::new(String::new());
    for (name, value) in given {
        let Some(arg) = args.iter().find(|a| &a.name == name) else {
            return Err(ArgError {
                parameter: name.clone(),
                detail: format!(
                    "unknown argument '{name}'; this tool takes: {}",
                    args.iter()
                        .map(|a| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                allowed: args.iter().map(|a| a.name.clone()).collect(),
            });
        };
        let bad = |what: &str| ArgError {
            parameter: name.clone(),
            detail: format!("argument '{name}' {what}"),
            allowed: Vec::new(),
        };
        match value {
            Value::Null => {}
            Value::Array(items) if arg.repeat => {
                for item in items {
                    q.append_pair(name, &scalar(item).ok_or_else(|| bad("takes strings"))?);
                }
            }
            Value::Array(items) => {
                let parts = items
                    .iter()
                    .map(scalar)
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad("takes a list of strings or numbers"))?;
                q.append_pair(name, &parts.join(","));
            }
            Value::Object(_) => return Err(bad("takes a value or a list, not an object")),
            v => {
                q.append_pair(name, &scalar(v).ok_or_else(|| bad("takes a value"))?);
            }
        }
    }
    Ok(q.finish())
}

/// A JSON scalar as a query writes it.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Domain;
    use crate::service::ask::{Question, parameter_specs};

    fn args(endpoint: Question) -> Vec<Arg> {
        merge_domains(
            args_of(parameter_specs(Domain::Llm, endpoint)),
            args_of(parameter_specs(Domain::Diffusion, endpoint)),
        )
    }

    #[test]
    fn catalog_names_without_aliases_or_format() {
        let names: Vec<String> = args(Question::List).into_iter().map(|a| a.name).collect();
        assert!(names.contains(&"task".to_string()));
        assert!(names.contains(&"max_num_seqs_min".to_string()));
        assert!(names.contains(&"batch_size".to_string()), "{names:?}");
        for gone in ["format", "model", "gpu", "batch", "batch_min"] {
            assert!(!names.contains(&gone.to_string()), "{gone} in {names:?}");
        }
        let list = args(Question::List);
        let arch = list.iter().find(|a| a.name == "architecture").unwrap();
        assert!(
            arch.schema["description"]
                .as_str()
                .unwrap()
                .ends_with("LLM runs only.")
        );
        // The field names of both domains.
        let fields = list.iter().find(|a| a.name == "fields").unwrap();
        let names = fields.schema["items"]["enum"].as_array().unwrap();
        assert!(names.contains(&json!("max_num_seqs")));
        assert!(names.contains(&json!("batch_size")));
    }

    #[test]
    fn arguments_become_the_query() {
        let list = args(Question::List);
        let given = json!({
            "task": ["gpqa", "lm-arena-chat"],
            "num_gpus_min": 2,
            "fields": ["run_id", "energy_per_token_joules"],
            "sort": ["-energy_per_token_joules"],
            "limit": 5,
            "model_id": "Qwen/Qwen3-8B",
        });
        let q = query(&list, given.as_object().unwrap()).unwrap();
        assert_eq!(
            q,
            "task=gpqa&task=lm-arena-chat&num_gpus_min=2&fields=run_id%2Cenergy_per_token_joules\
             &sort=-energy_per_token_joules&limit=5&model_id=Qwen%2FQwen3-8B"
        );
        let e = query(&list, json!({"taks": "gpqa"}).as_object().unwrap()).unwrap_err();
        assert_eq!(e.parameter, "taks");
        assert!(e.detail.contains("this tool takes: task,"), "{}", e.detail);
        let e = query(&list, json!({"limit": {"a": 1}}).as_object().unwrap()).unwrap_err();
        assert_eq!(e.parameter, "limit");
    }
}
