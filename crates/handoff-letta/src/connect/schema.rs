//! Handoff's input schema in the shape Letta's tool sandbox can run. The sandbox turns each
//! argument into Python by its property's `type` (`letta/services/helpers/tool_parser_helper.py`
//! `convert_param_to_str_value`), which must be ONE of string, integer, number, boolean, array,
//! object: a `["string", "null"]` list or an `anyOf` makes every call fail. So each top-level
//! property keeps its description and constraints with one type: optional ones lose their
//! `null` (leaving an argument out is how it stays unset), and a choice of constants becomes an
//! `enum` whose values' descriptions are added to the property's. Nested schemas stay as they
//! are (the sandbox passes them through whole).

use serde_json::{Map, Value, json};

/// The types the sandbox converts.
const SANDBOX_TYPES: &[&str] = &["string", "integer", "number", "boolean", "array", "object"];

/// Handoff's schema without `agent_id`, each top-level property with one sandbox type; `Err`
/// names a property that cannot have one.
pub(crate) fn for_letta(input: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let mut schema = input.clone();
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        // The caller is the agent Letta runs the tool for.
        required.retain(|r| r != "agent_id");
    }
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        schema.insert("properties".to_owned(), json!({}));
        return Ok(schema);
    };
    properties.remove("agent_id");
    for (name, property) in properties.iter_mut() {
        let Value::Object(object) = property else {
            return Err(format!("argument {name:?} has no schema"));
        };
        *property = Value::Object(one_type(object).map_err(|e| format!("argument {name:?}: {e}"))?);
    }
    Ok(schema)
}

/// A property with a single sandbox `type`.
fn one_type(property: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = property.get(key) else {
            continue;
        };
        let real: Vec<&Value> = branches.iter().filter(|b| !is_null(b)).collect();
        let mut outer = property.clone();
        outer.remove(key);
        if let [Value::Object(only)] = real.as_slice() {
            // `T or null`: T, with the outer description (the property's own) winning.
            let mut merged = only.clone();
            merged.extend(outer);
            return one_type(&merged);
        }
        return choices(outer, &real);
    }
    let mut property = property.clone();
    let kind = match property.get("type") {
        Some(Value::String(t)) => Some(t.clone()),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .map(str::to_owned),
        _ => None,
    };
    match kind {
        Some(kind) if SANDBOX_TYPES.contains(&kind.as_str()) => {
            property.insert("type".to_owned(), Value::String(kind));
            Ok(property)
        }
        _ => Err("needs one JSON type (string, integer, number, boolean, array or object)".into()),
    }
}

/// A choice of constants as an `enum`, the constants' descriptions appended to `outer`'s.
fn choices(
    mut outer: Map<String, Value>,
    branches: &[&Value],
) -> Result<Map<String, Value>, String> {
    let mut values = Vec::new();
    let mut told = Vec::new();
    let mut kind = None;
    for branch in branches {
        let Some(value) = branch
            .get("const")
            .filter(|v| v.is_string() || v.is_number())
        else {
            return Err("a choice of schemas that are not constants".into());
        };
        kind = kind.or_else(|| branch.get("type").cloned());
        if let Some(about) = branch.get("description").and_then(Value::as_str) {
            told.push(format!("{value} ({about})"));
        }
        values.push(value.clone());
    }
    let kind = kind.unwrap_or_else(|| json!("string"));
    let mut description = outer
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if !told.is_empty() {
        description = format!("{description} One of: {}", told.join(", "))
            .trim()
            .to_owned();
    }
    outer.insert("type".to_owned(), kind);
    outer.insert("enum".to_owned(), Value::Array(values));
    outer.insert("description".to_owned(), Value::String(description));
    one_type(&outer)
}

/// `{"type": "null"}`.
fn is_null(branch: &Value) -> bool {
    branch.get("type").and_then(Value::as_str) == Some("null")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn optional_types_lose_null_and_agent_id_goes() {
        let input = object(json!({
            "type": "object",
            "properties": {
                "agent_id": {"type": ["string", "null"]},
                "sync": {"type": ["boolean", "null"], "description": "Wait."},
                "task_id": {"type": "string", "pattern": "^task_"},
                "completion": {"type": ["object", "null"], "properties": {"x": {"type": ["integer", "null"]}}},
            },
            "required": ["task_id", "agent_id"],
        }));
        let out = Value::Object(for_letta(&input).unwrap());
        assert_eq!(
            out["properties"]["sync"],
            json!({"type": "boolean", "description": "Wait."})
        );
        assert_eq!(out["properties"]["task_id"], input["properties"]["task_id"]);
        // Nested schemas are left whole.
        assert_eq!(
            out["properties"]["completion"]["properties"],
            input["properties"]["completion"]["properties"]
        );
        assert_eq!(out["properties"].get("agent_id"), None);
        assert_eq!(out["required"], json!(["task_id"]));
    }

    #[test]
    fn choices_of_constants_become_an_enum_that_keeps_their_descriptions() {
        let input = object(json!({"properties": {
            "control": {"description": "What to do.", "oneOf": [
                {"const": "cancel", "type": "string", "description": "Stop for good."},
                {"const": "pause", "type": "string", "description": "Freeze."},
            ]},
            "status": {"description": "Only these.", "anyOf": [
                {"description": "A state.", "oneOf": [
                    {"const": "queued", "type": "string"}, {"const": "running", "type": "string"},
                ]},
                {"type": "null"},
            ]},
        }}));
        let out = Value::Object(for_letta(&input).unwrap());
        assert_eq!(
            out["properties"]["control"],
            json!({"type": "string", "enum": ["cancel", "pause"],
                   "description": "What to do. One of: \"cancel\" (Stop for good.), \"pause\" (Freeze.)"})
        );
        assert_eq!(
            out["properties"]["status"],
            json!({"type": "string", "enum": ["queued", "running"], "description": "Only these."})
        );
    }

    #[test]
    fn properties_without_one_type_are_named() {
        for bad in [
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
            json!({"description": "no type"}),
            json!({"type": ["null"]}),
        ] {
            let input = object(json!({"properties": {"odd": bad}}));
            let err = for_letta(&input).unwrap_err();
            assert!(err.contains("\"odd\""), "{err}");
        }
    }
}
