//! The JSON schemas tools publish (`inputSchema`, `outputSchema`): deterministic and inlined,
//! so every MCP client can use them and a client can produce the same ones from these types.

use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::{Map, Value};

/// A schema could not be generated (a programming error, caught by tests).
#[derive(Debug, thiserror::Error)]
#[error("schema for {type_name}: {message}")]
pub struct SchemaError {
    /// The Rust type whose schema failed.
    pub type_name: &'static str,
    /// What went wrong.
    pub message: String,
}

/// `format` values that are JSON Schema standard; others (schemars' `uint32`, `double`…) make
/// some clients warn, so they are dropped.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "uuid",
    "regex",
    "json-pointer",
];

/// The object schema of `T`, inlined (no `$ref`), without `$schema`, non-standard formats or
/// titles, so every MCP client (Ajv draft-07 in the TypeScript SDK included) can use it.
pub fn object_schema_for<T: JsonSchema>() -> Result<Map<String, Value>, SchemaError> {
    let type_name = std::any::type_name::<T>();
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    normalize(&mut value);
    let Value::Object(mut map) = value else {
        return Err(SchemaError {
            type_name,
            message: "schema is not an object".to_owned(),
        });
    };
    if map.get("type") != Some(&Value::String("object".to_owned())) {
        return Err(SchemaError {
            type_name,
            message: "tool arguments and outputs must be JSON objects".to_owned(),
        });
    }
    map.entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    Ok(map)
}

fn normalize(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("$schema");
            map.remove("title");
            if let Some(Value::String(format)) = map.get("format")
                && !STANDARD_FORMATS.contains(&format.as_str())
            {
                map.remove("format");
            }
            map.values_mut().for_each(normalize);
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        _ => {}
    }
}
