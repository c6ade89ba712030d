use handoff_engine::EngineError;
use handoff_protocol::codes;
use handoff_runner::RunnerError;

use crate::ToolError;

/// The one mapping from engine errors to tool errors.
pub(super) fn tool_error(tool: &str, error: EngineError) -> ToolError {
    let text = error.to_string();
    match error {
        EngineError::NotFound(what) => ToolError::NotFound {
            what: format!("task {what}"),
        },
        EngineError::Invalid { field, message } => ToolError::InvalidArguments {
            tool: tool.to_owned(),
            pointer: format!("/{field}"),
            message,
        },
        EngineError::QueueFull { retry_after, .. } => ToolError::Busy {
            code: codes::QUEUE_FULL,
            message: text,
            retry_after: Some(retry_after),
        },
        EngineError::RateLimited { retry_after, .. } => ToolError::Busy {
            code: codes::RATE_LIMITED,
            message: text,
            retry_after: Some(retry_after),
        },
        EngineError::Unreachable { retry_after, .. } => ToolError::Busy {
            code: codes::UNAVAILABLE,
            message: text,
            retry_after: Some(retry_after),
        },
        EngineError::Conflict(message) => ToolError::Conflict { message },
        EngineError::Forbidden(reason) => ToolError::Denied {
            tool: tool.to_owned(),
            reason,
        },
        EngineError::Unavailable(message) => ToolError::Unsupported { message },
        EngineError::Runner(RunnerError::Unsupported { .. }) => {
            ToolError::Unsupported { message: text }
        }
        EngineError::Runner(RunnerError::Finished) => ToolError::Conflict {
            message: "the task's run has already finished".to_owned(),
        },
        other => {
            tracing::error!(tool, error = %other, "task engine failure");
            ToolError::Internal { message: text }
        }
    }
}
