//! Argument validation against the schemas `handoff-protocol` generates (deterministic,
//! client-friendly).

pub(crate) use handoff_protocol::{SchemaError, object_schema_for};
use serde_json::{Map, Value};

/// The first problem found in a tool's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationFailure {
    /// JSON pointer of the offending value (`""` = the arguments object itself).
    pub pointer: String,
    /// What was expected there.
    pub message: String,
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
                    let name = crate::excerpt::excerpt(&name);
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
                // Never the value itself: a 1 MiB string would come back whole in the error,
                // the log and the audit row. An excerpt and the size name it well enough.
                _ => ValidationFailure {
                    pointer: base,
                    message: error
                        .masked_with(crate::excerpt::describe(error.instance()))
                        .to_string(),
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
    use schemars::JsonSchema;
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

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Short {
        #[schemars(length(max = 64))]
        message: String,
    }

    #[test]
    fn huge_values_are_named_by_field_excerpt_and_size_never_echoed() {
        let v = compile("Short", &object_schema_for::<Short>().unwrap()).unwrap();
        let huge = "a".repeat(1 << 20);
        let too_long = validate(&v, &json!({ "message": huge })).unwrap_err();
        assert_eq!(too_long.pointer, "/message");
        assert!(too_long.message.len() < 200, "{}", too_long.message);
        assert!(
            too_long.message.contains("1048576 bytes"),
            "{}",
            too_long.message
        );
        assert!(too_long.message.contains("64"), "{}", too_long.message);
        let wrong_type = validate(&checker(), &json!({ "count": huge })).unwrap_err();
        assert_eq!(wrong_type.pointer, "/count");
        assert!(wrong_type.message.len() < 200, "{}", wrong_type.message);
        assert!(
            wrong_type.message.contains("integer"),
            "{}",
            wrong_type.message
        );
        let big_key = "k".repeat(1 << 20);
        let unknown = validate(&checker(), &json!({ "count": 1, big_key: 1 })).unwrap_err();
        assert!(unknown.pointer.len() < 200, "{}", unknown.pointer);
        assert!(unknown.message.len() < 200, "{}", unknown.message);
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
