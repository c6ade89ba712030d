//! Conversions between Handoff's tool types and MCP's wire types — the one place domain errors
//! become MCP errors.

use handoff_tools::{ToolDefinition, ToolError};
use rmcp::{
    ErrorData as McpError,
    model::{CallToolResult, ContentBlock, Tool, ToolAnnotations},
};
use serde_json::{Value, json};

/// A tool definition as `tools/list` shows it.
pub(crate) fn tool_to_wire(def: &ToolDefinition) -> Tool {
    let a = def.annotations;
    Tool::new(def.name, def.description, def.input_schema.clone())
        .with_raw_output_schema(def.output_schema.clone())
        .with_annotations(ToolAnnotations::from_raw(
            None,
            Some(a.read_only),
            Some(a.destructive),
            Some(a.idempotent),
            Some(a.open_world),
        ))
}

/// A pipeline outcome as a `tools/call` answer.
///
/// Unknown tools are protocol errors (`-32602`, as the spec says); every other failure is a
/// tool result with `isError: true` and a JSON body the calling model can read and act on.
/// Error results carry no `structuredContent`, since it would not match the `outputSchema`.
pub(crate) fn outcome_to_wire(
    outcome: Result<Value, ToolError>,
) -> Result<CallToolResult, McpError> {
    match outcome {
        Ok(value) => Ok(CallToolResult::structured(value)),
        Err(ToolError::UnknownTool { name }) => {
            // The name is the caller's text: an excerpt, never a megabyte back.
            let name = handoff_tools::excerpt::excerpt(&name);
            Err(McpError::invalid_params(
                format!("unknown tool: {name}"),
                Some(json!({ "code": "UNKNOWN_TOOL", "tool": name })),
            ))
        }
        Err(error) => {
            let body = json!({ "error": error.body() });
            Ok(CallToolResult::error(vec![ContentBlock::text(
                body.to_string(),
            )]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_arguments_become_a_readable_error_result() {
        let result = outcome_to_wire(Err(ToolError::InvalidArguments {
            tool: "ping".into(),
            pointer: "/message".into(),
            message: "42 is not of type \"string\"".into(),
        }))
        .unwrap();
        assert_eq!(result.is_error, Some(true));
        assert!(result.structured_content.is_none());
        let text = serde_json::to_value(&result.content[0]).unwrap()["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["error"]["code"], "INVALID_ARGUMENTS");
        assert_eq!(body["error"]["pointer"], "/message");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("/message")
        );
    }

    #[test]
    fn unknown_tool_is_invalid_params() {
        let err = outcome_to_wire(Err(ToolError::UnknownTool {
            name: "nope".into(),
        }))
        .unwrap_err();
        assert_eq!(err.code.0, -32602);
        assert!(err.message.contains("nope"));
    }
}
