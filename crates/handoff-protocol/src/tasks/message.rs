//! `send_task_message`: tell a task's executor something, or answer its pending request.

use handoff_task::{AgentId, MessageType, TaskId, TaskStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{call::tool_call, names};

/// Arguments of `send_task_message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendTaskMessageArgs {
    /// Calling agent (defaults to the x-agent-id header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The task.
    pub task_id: TaskId,
    /// What to tell the working agent; for message_type approval, the answer to its pending
    /// request: {"decision":"allow"|"deny","scope"?:"once"|"task"|"project","patterns"?:["…"],
    /// "message"?:"…","request_id"?:"…"} (scope always means task; patterns only with scope
    /// task or project) or the word allow / deny.
    #[schemars(length(min = 1, max = 65536))]
    pub message: String,
    /// What kind of message it is (default update).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_type: Option<MessageType>,
    /// Free-form JSON object recorded with the message (at most 16 KiB serialized).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// Result of `send_task_message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SendTaskMessageOutput {
    /// The task.
    pub task_id: String,
    /// Its state when the message arrived.
    pub status: TaskStatus,
    /// The message's event number in the task history.
    pub event_seq: i64,
    /// The running executor received it.
    pub delivered: bool,
    /// What happened to the message.
    pub note: String,
}

tool_call! {
    SendTaskMessageArgs => names::SEND_TASK_MESSAGE, SendTaskMessageOutput;
}
