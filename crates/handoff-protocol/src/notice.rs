//! What happened to a task, in one shape wherever it goes: published to this process's
//! followers (sync waits, MCP Tasks polling, the elicitation relay, the dashboard) and copied
//! to the other instances sharing the store, whose followers read the same type (a run's event
//! queue).

use handoff_task::{TaskId, TaskStatus};
use serde::{Deserialize, Serialize};

/// Something that happened to a task: a hint to re-read it, never its content.
///
/// As JSON: `{"events": "task_…"}` or `{"status": ["task_…", "running"]}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskNotice {
    /// New events were appended to the task's history.
    Events(TaskId),
    /// The task moved to a new state.
    Status(TaskId, TaskStatus),
}

impl TaskNotice {
    /// The task it is about.
    pub fn task(&self) -> &TaskId {
        match self {
            TaskNotice::Events(id) | TaskNotice::Status(id, _) => id,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn notices_round_trip() {
        let id = TaskId::generate().unwrap();
        let status = TaskNotice::Status(id.clone(), TaskStatus::InputRequired);
        let value = serde_json::to_value(&status).unwrap();
        assert_eq!(value, json!({"status": [id.as_str(), "input_required"]}));
        assert_eq!(serde_json::from_value::<TaskNotice>(value).unwrap(), status);
        let events = TaskNotice::Events(id.clone());
        let value = serde_json::to_value(&events).unwrap();
        assert_eq!(value, json!({"events": id.as_str()}));
        assert_eq!(serde_json::from_value::<TaskNotice>(value).unwrap(), events);
        assert_eq!(events.task(), &id);
    }
}
