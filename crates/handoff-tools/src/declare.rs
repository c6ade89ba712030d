//! One declaration per tool: typed arguments + description + typed output.

use std::{future::Future, sync::Arc};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Map, Value};

use crate::{
    ToolContext, ToolError,
    schema::{self, SchemaError, ValidationFailure},
};

/// Behaviour hints shown to clients (MCP tool annotations).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolAnnotations {
    /// The tool changes nothing.
    pub read_only: bool,
    /// The tool may destroy or overwrite things.
    pub destructive: bool,
    /// Calling twice with the same arguments has no extra effect.
    pub idempotent: bool,
    /// The tool reaches outside Handoff (executors, the network).
    pub open_world: bool,
}

/// What one call of a tool produced: the structured result (`structuredContent`) and the text a
/// language model reads (`content`). Many clients (Letta among them) pass only the text on, so
/// it must stand alone: the outcome first, then the facts that matter, then what to do next —
/// bounded, never a dump of the structured result.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply<O> {
    /// The structured result.
    pub output: O,
    /// The summary for a model.
    pub text: String,
}

impl<O> Reply<O> {
    /// A reply of `output` summed up by `text`.
    pub fn new(output: O, text: impl Into<String>) -> Self {
        Self {
            output,
            text: text.into(),
        }
    }
}

/// A tool Handoff serves. `Args` must reject unknown fields (`#[serde(deny_unknown_fields)]`).
pub trait Tool: Send + Sync + 'static {
    /// The validated, deserialized arguments.
    type Args: DeserializeOwned + JsonSchema + Send;
    /// The structured result (becomes `structuredContent`, described by `outputSchema`).
    type Output: Serialize + JsonSchema + Send;

    /// The tool's name on the wire.
    fn name(&self) -> &'static str;

    /// Other names accepted for calls (kept for older agents); never listed.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }

    /// What the tool does, for the model reading `tools/list`.
    fn description(&self) -> &'static str;

    /// Behaviour hints.
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }

    /// Runs the tool on validated arguments: its structured output and the text summing it up.
    fn call(
        &self,
        ctx: ToolContext,
        args: Self::Args,
    ) -> impl Future<Output = Result<Reply<Self::Output>, ToolError>> + Send;
}

/// What `tools/list` shows of a tool, plus its compiled argument validator.
#[derive(Clone)]
pub struct ToolDefinition {
    /// Wire name.
    pub name: &'static str,
    /// Accepted alternative names.
    pub aliases: &'static [&'static str],
    /// Description.
    pub description: &'static str,
    /// Behaviour hints.
    pub annotations: ToolAnnotations,
    /// JSON schema of the arguments (`additionalProperties: false`).
    pub input_schema: Arc<Map<String, Value>>,
    /// JSON schema of the structured output.
    pub output_schema: Arc<Map<String, Value>>,
    validator: Arc<jsonschema::Validator>,
}

impl ToolDefinition {
    /// Whether the arguments declare an `agent_id` property (filled from the caller's identity).
    pub fn takes_agent_id(&self) -> bool {
        self.input_schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.contains_key("agent_id"))
    }

    /// Validates raw arguments against the schema.
    pub fn validate(&self, args: &Value) -> Result<(), ValidationFailure> {
        schema::validate(&self.validator, args)
    }
}

impl std::fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A deserializer's message with the offending value (serde quotes strings whole) replaced by
/// an excerpt and its size.
fn unechoed(message: String, value: Option<&Value>) -> String {
    let Some(Value::String(text)) = value else {
        return message;
    };
    if text.chars().nth(crate::excerpt::EXCERPT_CHARS).is_none() {
        return message;
    }
    let short = crate::excerpt::describe_str(text);
    message
        .replace(&format!("{text:?}"), &short)
        .replace(text.as_str(), &short)
}

/// A tool with its types erased, as the registry and pipeline hold it.
pub(crate) trait ErasedTool: Send + Sync {
    fn definition(&self) -> &ToolDefinition;
    /// Deserializes already-validated arguments and runs the tool.
    fn call_value(
        &self,
        ctx: ToolContext,
        args: Value,
    ) -> BoxFuture<'_, Result<Reply<Value>, ToolError>>;
}

pub(crate) struct TypedTool<T: Tool> {
    tool: T,
    definition: ToolDefinition,
}

impl<T: Tool> TypedTool<T> {
    pub(crate) fn new(tool: T) -> Result<Self, SchemaError> {
        let input_schema = schema::object_schema_for::<T::Args>()?;
        let output_schema = schema::object_schema_for::<T::Output>()?;
        let validator = schema::compile(std::any::type_name::<T::Args>(), &input_schema)?;
        let definition = ToolDefinition {
            name: tool.name(),
            aliases: tool.aliases(),
            description: tool.description(),
            annotations: tool.annotations(),
            input_schema: Arc::new(input_schema),
            output_schema: Arc::new(output_schema),
            validator: Arc::new(validator),
        };
        Ok(Self { tool, definition })
    }
}

impl<T: Tool> ErasedTool for TypedTool<T> {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call_value(
        &self,
        ctx: ToolContext,
        args: Value,
    ) -> BoxFuture<'_, Result<Reply<Value>, ToolError>> {
        let name = self.definition.name;
        Box::pin(async move {
            // Rules the schema cannot express (newtype checks) still name the field.
            let args: T::Args = serde_path_to_error::deserialize(&args).map_err(|e| {
                let path = e.path().to_string();
                let pointer = if path == "." {
                    String::new()
                } else {
                    format!("/{}", path.replace('.', "/"))
                };
                let message = unechoed(e.into_inner().to_string(), args.pointer(&pointer));
                ToolError::InvalidArguments {
                    tool: name.to_owned(),
                    pointer,
                    message,
                }
            })?;
            let reply = self.tool.call(ctx, args).await?;
            let output = serde_json::to_value(reply.output).map_err(|e| ToolError::Internal {
                message: format!("tool `{name}` produced unserializable output: {e}"),
            })?;
            Ok(Reply::new(output, reply.text))
        })
    }
}
