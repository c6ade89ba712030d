//! `execute_task` with `continue_task`: a follow-up round of an earlier task, the same engine
//! command `send_task_message` gives a finished task.

use handoff_protocol::tasks::ExecuteTaskArgs;
use handoff_task::{MessageType, TaskId};

use crate::ToolError;

/// The task to continue and the follow-up request, when `args` asks for a follow-up; a
/// setting that belongs to a new task given with it is refused by name.
pub(super) fn follow_up_of(
    tool: &str,
    args: &ExecuteTaskArgs,
) -> Result<Option<(TaskId, String)>, ToolError> {
    let Some(id) = &args.continue_task else {
        return Ok(None);
    };
    let given = [
        ("executor", args.executor.is_some()),
        ("workdir", args.workdir.is_some()),
        ("idempotency_key", args.idempotency_key.is_some()),
        ("timeout_ms", args.timeout_ms.is_some()),
        ("priority", args.priority.is_some()),
        ("observers", args.observers.is_some()),
        ("metadata", args.metadata.is_some()),
        ("branch", args.branch.is_some()),
        ("base", args.base.is_some()),
        ("delivery", args.delivery.is_some()),
        ("requeue_on_restart", args.requeue_on_restart.is_some()),
        ("notify", args.notify.is_some()),
        ("permissions", args.permissions.is_some()),
        ("completion", args.completion.is_some()),
    ];
    if let Some((field, _)) = given.iter().find(|(_, set)| *set) {
        return Err(ToolError::InvalidArguments {
            tool: tool.to_owned(),
            pointer: format!("/{field}"),
            message: "a continued task keeps its own settings: give only continue_task, \
                      task_description and sync"
                .to_owned(),
        });
    }
    Ok(Some((id.clone(), args.task_description.clone())))
}

/// The kind of message a follow-up request is recorded as.
pub(super) const FOLLOW_UP: MessageType = MessageType::Update;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(extra: serde_json::Value) -> ExecuteTaskArgs {
        let mut base = serde_json::json!({
            "task_description": "and add tests",
            "continue_task": "task_abcdefghijklmnopqrstuvwxyz",
        });
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn a_follow_up_takes_only_its_request() {
        let (id, request) = follow_up_of("execute_task", &args(serde_json::json!({})))
            .unwrap()
            .unwrap();
        assert_eq!(id.as_str(), "task_abcdefghijklmnopqrstuvwxyz");
        assert_eq!(request, "and add tests");
        let sync = args(serde_json::json!({"sync": true}));
        assert!(follow_up_of("execute_task", &sync).unwrap().is_some());
        let err = follow_up_of("execute_task", &args(serde_json::json!({"executor": "x"})))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/executor"), "{err}");
        assert!(!err.contains("\"x\""), "{err}");
        let plain: ExecuteTaskArgs =
            serde_json::from_value(serde_json::json!({"task_description": "new"})).unwrap();
        assert!(follow_up_of("execute_task", &plain).unwrap().is_none());
    }
}
