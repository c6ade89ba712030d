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
        EngineError::Unavailable(message) => ToolError::NotSetUp { message },
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn an_unreachable_store_is_unavailable_with_its_retry_hint() {
        let error = EngineError::Unreachable {
            message: "the task store is unreachable: no answer within 1000 ms; retry in 2 s".into(),
            retry_after: Duration::from_secs(2),
        };
        let mapped = tool_error("execute_task", error);
        assert_eq!(mapped.code(), codes::UNAVAILABLE);
        assert!(handoff_protocol::codes::is_retryable(mapped.code()));
        let ToolError::Busy {
            message,
            retry_after,
            ..
        } = mapped
        else {
            panic!("{mapped:?}");
        };
        assert_eq!(retry_after, Some(Duration::from_secs(2)));
        assert!(message.contains("no answer within 1000 ms"), "{message}");
    }
}
