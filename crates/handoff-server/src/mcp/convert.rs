//! Conversions between Handoff's tool types and MCP's wire types — the one place domain errors
//! become MCP errors.

use handoff_tools::{ERROR_META_KEY, ReplyOutcome, ToolDefinition, ToolError};
use rmcp::{
    ErrorData as McpError,
    model::{CallToolResult, ContentBlock, MetaObject, Tool, ToolAnnotations},
};
use serde_json::{Map, Value, json};

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
/// tool result with `isError: true`, a text the calling model can act on (many clients pass
/// only the text on) and the machine-readable body in `_meta["handoff/error"]`. Error results
/// carry no `structuredContent`, since it would not match the `outputSchema`.
pub(crate) fn outcome_to_wire(outcome: ReplyOutcome) -> Result<CallToolResult, McpError> {
    match outcome {
        Ok(reply) => Ok(answered(reply.output, reply.text)),
        Err(ToolError::UnknownTool { name }) => {
            // The name is the caller's text: an excerpt, never a megabyte back.
            let name = handoff_tools::excerpt::excerpt(&name);
            Err(McpError::invalid_params(
                format!("unknown tool: {name}"),
                Some(json!({ "code": "UNKNOWN_TOOL", "tool": name })),
            ))
        }
        Err(error) => {
            let mut meta = Map::new();
            meta.insert(ERROR_META_KEY.to_owned(), json!(error.body()));
            let result = CallToolResult::error(vec![ContentBlock::text(error.text())]);
            Ok(result.with_meta(Some(MetaObject(meta))))
        }
    }
}

/// A successful result: the tool's text for models, its structured output for programs.
pub(crate) fn answered(structured: Value, text: String) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

#[cfg(test)]
mod tests {
    use handoff_tools::Reply;

    use super::*;

    fn text_of(result: &CallToolResult) -> String {
        serde_json::to_value(&result.content[0]).unwrap()["text"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn a_result_carries_the_tool_s_text_and_its_structured_output() {
        let result =
            outcome_to_wire(Ok(Reply::new(json!({"ok": true}), "Handoff 1.0 answers."))).unwrap();
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.structured_content, Some(json!({"ok": true})));
        assert_eq!(text_of(&result), "Handoff 1.0 answers.");
    }

    #[test]
    fn invalid_arguments_become_a_readable_error_with_its_body_in_meta() {
        let result = outcome_to_wire(Err(ToolError::InvalidArguments {
            tool: "ping".into(),
            pointer: "/message".into(),
            message: "42 is not of type \"string\"".into(),
        }))
        .unwrap();
        assert_eq!(result.is_error, Some(true));
        assert!(result.structured_content.is_none());
        let text = text_of(&result);
        assert!(text.starts_with("Error INVALID_ARGUMENTS: "), "{text}");
        assert!(text.contains("/message"), "{text}");
        assert!(text.contains("\nFix: correct /message"), "{text}");
        let meta = result.meta.unwrap().0;
        let body = &meta[ERROR_META_KEY];
        assert_eq!(body["code"], "INVALID_ARGUMENTS");
        assert_eq!(body["pointer"], "/message");
        assert!(body["message"].as_str().unwrap().contains("/message"));
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
