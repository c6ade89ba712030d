//! Reading a tool's input schema: the fields to attack, a valid value for any of them, and
//! putting a value at a path with valid parents around it.

use serde_json::{Map, Value, json};

/// One step of a path into the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// An object member.
    Key(String),
    /// The first element of an array.
    First,
}

/// A path into the arguments, as text for case names (`completion/budget/turns`).
pub fn show(path: &[Seg]) -> String {
    let parts: Vec<&str> = path
        .iter()
        .map(|s| match s {
            Seg::Key(k) => k.as_str(),
            Seg::First => "0",
        })
        .collect();
    if parts.is_empty() {
        "(arguments)".into()
    } else {
        parts.join("/")
    }
}

/// A field of the arguments: where it is, its schema, whether its parent requires it.
#[derive(Debug, Clone)]
pub struct Field {
    /// Where it is.
    pub path: Vec<Seg>,
    /// Its schema.
    pub schema: Value,
    /// Its parent object lists it in `required`.
    pub required: bool,
}

/// The alternatives of `anyOf`/`oneOf` (flattened), or the schema itself.
fn alternatives(schema: &Value) -> Vec<&Value> {
    for key in ["anyOf", "oneOf"] {
        if let Some(list) = schema[key].as_array() {
            return list.iter().flat_map(alternatives).collect();
        }
    }
    vec![schema]
}

/// The JSON types a schema admits, as declared (`type` as a string or a list).
fn types(schema: &Value) -> Vec<&str> {
    match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The object alternative of a schema, when it declares properties.
pub fn object_schema(schema: &Value) -> Option<&Value> {
    alternatives(schema)
        .into_iter()
        .find(|alt| types(alt).contains(&"object") && alt["properties"].is_object())
}

/// The item schema of an array of objects with properties.
fn object_items(schema: &Value) -> Option<&Value> {
    alternatives(schema)
        .into_iter()
        .find(|alt| types(alt).contains(&"array"))
        .and_then(|alt| object_schema(&alt["items"]))
}

/// Every field of an object schema, nested objects and array-of-object items included.
pub fn fields(schema: &Value, path: &[Seg], out: &mut Vec<Field>) {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return;
    };
    for (key, sub) in properties {
        let mut at = path.to_vec();
        at.push(Seg::Key(key.clone()));
        out.push(Field {
            path: at.clone(),
            schema: sub.clone(),
            required: required.contains(&key.as_str()),
        });
        if let Some(object) = object_schema(sub) {
            fields(object, &at, out);
        }
        if let Some(items) = object_items(sub) {
            at.push(Seg::First);
            fields(items, &at, out);
        }
    }
}

/// Examples for the patterns Handoff's schemas use; a new pattern must be added here.
fn example_for(pattern: &str) -> Value {
    let example = match pattern {
        "^[A-Za-z0-9_-]{1,128}$" => "bad-input-agent".to_owned(),
        "^task_[a-z2-7]{26}$" => format!("task_{}", "a".repeat(26)),
        "^tool_[0-9a-f]{32}$" => format!("tool_{}", "0".repeat(32)),
        "^ap_[0-9a-f]{32}$" => format!("ap_{}", "0".repeat(32)),
        "^c[0-9]{1,19}$" => "c1".to_owned(),
        other => panic!("no example for schema pattern {other:?}: add one to example_for"),
    };
    json!(example)
}

/// A value the schema accepts: consts first, then the first non-null type, objects with
/// their required members only.
pub fn valid_value(schema: &Value) -> Value {
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    let alts = alternatives(schema);
    if alts.len() > 1 || !std::ptr::eq(alts[0], schema) {
        let alt = alts
            .into_iter()
            .find(|a| types(a) != ["null"])
            .unwrap_or_else(|| panic!("only null in {schema}"));
        return valid_value(alt);
    }
    let number = |key: &str| schema[key].as_i64();
    match types(schema).into_iter().find(|t| *t != "null") {
        Some("object") => {
            let mut object = Map::new();
            for key in schema["required"].as_array().into_iter().flatten() {
                let key = key.as_str().unwrap();
                object.insert(key.into(), valid_value(&schema["properties"][key]));
            }
            Value::Object(object)
        }
        Some("string") => match schema["pattern"].as_str() {
            Some(pattern) => example_for(pattern),
            None => json!("x".repeat(number("minLength").unwrap_or(1).max(1) as usize)),
        },
        Some("integer") => json!(number("minimum").unwrap_or(0)),
        Some("number") => json!(0),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        _ => Value::Null,
    }
}

/// The schema of the value one step below a value with schema `schema`.
fn member_schema(schema: &Value, seg: &Seg) -> Value {
    match seg {
        Seg::Key(k) => object_schema(schema).unwrap_or(schema)["properties"][k].clone(),
        Seg::First => alternatives(schema)
            .into_iter()
            .find(|alt| types(alt).contains(&"array"))
            .map(|alt| alt["items"].clone())
            .unwrap_or(Value::Null),
    }
}

/// Puts `value` at `path` (or removes the member when `None`), first giving every missing
/// parent a valid value so only the last step is at fault.
pub fn put(args: &mut Value, schema: &Value, path: &[Seg], value: Option<Value>) {
    let (last, parents) = path.split_last().expect("a path has a last step");
    let mut here = args;
    let mut here_schema = schema.clone();
    for (i, seg) in parents.iter().enumerate() {
        let sub = member_schema(&here_schema, seg);
        here = match seg {
            Seg::Key(k) => &mut here[k.as_str()],
            Seg::First => &mut here[0],
        };
        if here.is_null() {
            *here = match path[i + 1] {
                Seg::First => json!([valid_value(&member_schema(&sub, &Seg::First))]),
                Seg::Key(_) => valid_value(&sub),
            };
        }
        here_schema = sub;
    }
    match (last, value) {
        (Seg::Key(k), Some(v)) => here[k.as_str()] = v,
        (Seg::Key(k), None) => {
            here.as_object_mut().expect("parent is an object").remove(k);
        }
        (Seg::First, Some(v)) => here[0] = v,
        (Seg::First, None) => {
            here.as_array_mut().expect("parent is an array").remove(0);
        }
    }
}
