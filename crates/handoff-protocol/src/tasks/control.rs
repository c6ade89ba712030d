//! `send_task_control`: cancel, pause or resume a task.

use handoff_task::{AgentId, TaskId, TaskStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{call::tool_call, names};

/// A control action on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ControlAction {
    /// Stop the task for good (graceful, then forced).
    Cancel,
    /// Freeze a running task.
    Pause,
    /// Unfreeze a paused task.
    Resume,
}

impl ControlAction {
    /// The action's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ControlAction::Cancel => "cancel",
            ControlAction::Pause => "pause",
            ControlAction::Resume => "resume",
        }
    }
}

/// Arguments of `send_task_control`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendTaskControlArgs {
    /// Calling agent (defaults to the x-agent-id header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The task.
    pub task_id: TaskId,
    /// What to do.
    pub control: ControlAction,
    /// Why (recorded in the task history).
    #[schemars(length(max = 2000))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Result of `send_task_control`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SendTaskControlOutput {
    /// The task.
    pub task_id: String,
    /// Its state afterwards.
    pub status: TaskStatus,
    /// False when it already was in the asked-for state.
    pub changed: bool,
    /// What happened.
    pub message: String,
}

tool_call! {
    SendTaskControlArgs => names::SEND_TASK_CONTROL, SendTaskControlOutput;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_actions_name_is_its_wire_name() {
        for action in [
            ControlAction::Cancel,
            ControlAction::Pause,
            ControlAction::Resume,
        ] {
            let wire = serde_json::to_value(action).unwrap();
            assert_eq!(wire, action.as_str());
            assert_eq!(
                serde_json::from_value::<ControlAction>(wire).unwrap(),
                action
            );
        }
    }
}
