//! The dashboard's only way to the engine: tool calls through the pipeline, made as the
//! operator who is looking, so they are permission-checked and audited like an MCP client's.

use handoff_protocol::ToolCall;
use handoff_tools::{CallRequest, Pipeline, ToolContext, ToolError};
use serde_json::Value;

use super::auth::Viewer;

/// Calls tools for the dashboard.
#[derive(Clone)]
pub(crate) struct Tools {
    pipeline: Pipeline,
}

impl Tools {
    /// Calls through `pipeline`.
    pub(crate) fn new(pipeline: Pipeline) -> Self {
        Self { pipeline }
    }

    /// Calls the tool `A` names with `args`, as `viewer`; its structured result.
    pub(crate) async fn call<A: ToolCall>(
        &self,
        viewer: &Viewer,
        args: &A,
    ) -> Result<A::Output, ToolError> {
        let arguments = match serde_json::to_value(args) {
            Ok(Value::Object(map)) => Some(map),
            _ => {
                return Err(ToolError::Internal {
                    message: format!("the dashboard could not encode {} arguments", A::NAME),
                });
            }
        };
        let ctx = ToolContext::new(crate::call_id::next(), "dashboard".to_owned())
            .with_agent(Some(viewer.name.clone()))
            .with_operator(true);
        let request = CallRequest {
            name: A::NAME.to_owned(),
            arguments,
        };
        let output = self.pipeline.call(ctx, request).await?;
        serde_json::from_value(output).map_err(|e| ToolError::Internal {
            message: format!("{} answered in an unexpected shape: {e}", A::NAME),
        })
    }
}
