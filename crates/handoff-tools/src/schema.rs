//! Schema generation (deterministic, client-friendly) and argument validation against it.

use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::{Map, Value};

/// A tool's schema could not be generated or compiled (a programming error, caught by tests).
#[derive(Debug, thiserror::Error)]
#[error("schema for {type_name}: {message}")]
pub struct SchemaError {
    /// The Rust type whose schema failed.
    pub type_name: &'static str,
    /// What went wrong.
    pub message: String,
}

/// The first problem found in a tool's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationFailure {
    /// JSON pointer of the offending value (`""` = the arguments object itself).
    pub pointer: String,
    /// What was expected there.
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
pub(crate) fn object_schema_for<T: JsonSchema>() -> Result<Map<String, Value>, SchemaError> {
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

/// Compiles a validator for a generated schema.
pub(crate) fn compile(
    type_name: &'static str,
    schema: &Map<String, Value>,
) -> Result<jsonschema::Validator, SchemaError> {
    jsonschema::validator_for(&Value::Object(schema.clone())).map_err(|e| SchemaError {
        type_name,
        message: e.to_string(),
    })
}

/// Validates `args`, reporting the first failure (in document order) with its JSON pointer.
pub(crate) fn validate(
    validator: &jsonschema::Validator,
    args: &Value,
) -> Result<(), ValidationFailure> {
    if !args.is_object() {
        return Err(ValidationFailure {
            pointer: String::new(),
            message: "arguments must be a JSON object".to_owned(),
        });
    }
    let mut failures: Vec<ValidationFailure> = validator
        .iter_errors(args)
        .map(|error| {
            let base = error.instance_path().to_string();
            match error.kind() {
                jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                    let name = unexpected.first().cloned().unwrap_or_default();
                    ValidationFailure {
                        pointer: format!("{base}/{}", escape_pointer(&name)),
                        message: format!("unknown field `{name}`"),
                    }
                }
                jsonschema::error::ValidationErrorKind::Required { property } => {
                    let name = property
                        .as_str()
                        .map_or_else(|| property.to_string(), str::to_owned);
                    ValidationFailure {
                        pointer: format!("{base}/{}", escape_pointer(&name)),
                        message: format!("missing required field `{name}`"),
                    }
                }
                _ => ValidationFailure {
                    pointer: base,
                    message: error.to_string(),
                },
            }
        })
        .collect();
    failures.sort_by(|a, b| a.pointer.cmp(&b.pointer));
    match failures.into_iter().next() {
        Some(first) => Err(first),
        None => Ok(()),
    }
}

fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        /// Count.
        count: u32,
        name: Option<String>,
    }

    fn checker() -> jsonschema::Validator {
        compile("Args", &object_schema_for::<Args>().unwrap()).unwrap()
    }

    #[test]
    fn schema_is_closed_and_client_friendly() {
        let schema = object_schema_for::<Args>().unwrap();
        assert_eq!(schema["additionalProperties"], json!(false));
        assert!(!schema.contains_key("$schema"));
        assert!(schema["properties"]["count"].get("format").is_none());
        assert_eq!(schema["required"], json!(["count"]));
    }

    #[test]
    fn reports_the_bad_field() {
        let v = checker();
        assert_eq!(validate(&v, &json!({"count": 1})), Ok(()));
        let bad_type = validate(&v, &json!({"count": "x"})).unwrap_err();
        assert_eq!(bad_type.pointer, "/count");
        assert!(bad_type.message.contains("integer"), "{}", bad_type.message);
        let unknown = validate(&v, &json!({"count": 1, "extra": true})).unwrap_err();
        assert_eq!(
            unknown,
            ValidationFailure {
                pointer: "/extra".into(),
                message: "unknown field `extra`".into()
            }
        );
        let missing = validate(&v, &json!({})).unwrap_err();
        assert_eq!(missing.pointer, "/count");
        let negative = validate(&v, &json!({"count": -1})).unwrap_err();
        assert_eq!(negative.pointer, "/count");
        let not_object = validate(&v, &json!([1])).unwrap_err();
        assert_eq!(not_object.pointer, "");
    }
}
