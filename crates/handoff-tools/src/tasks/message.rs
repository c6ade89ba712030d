use handoff_engine::Engine;
use handoff_task::{MessageType, TaskId, TaskStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{caller, failure::tool_error};
use crate::{AgentId, Tool, ToolAnnotations, ToolContext, ToolError};

/// Arguments of `send_task_message`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendTaskMessageArgs {
    /// Calling agent (defaults to the x-agent-id header).
    pub agent_id: Option<AgentId>,
    /// The task.
    pub task_id: TaskId,
    /// What to tell the working agent; for message_type approval, the answer to its pending
    /// request: {"decision":"allow"|"deny","scope"?:"once"|"always","message"?:"…","request_id"?:"…"}
    /// or the word allow / deny.
    #[schemars(length(min = 1, max = 65536))]
    pub message: String,
    /// What kind of message it is (default update).
    pub message_type: Option<MessageType>,
    /// Free-form JSON object recorded with the message.
    pub metadata: Option<Map<String, Value>>,
}

/// Result of `send_task_message`.
#[derive(Debug, Serialize, JsonSchema)]
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

/// `send_task_message`: tells a task's executor something while it works.
pub struct SendTaskMessageTool {
    engine: Engine,
}

impl SendTaskMessageTool {
    /// A tool steering `engine`.
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }
}

impl Tool for SendTaskMessageTool {
    type Args = SendTaskMessageArgs;
    type Output = SendTaskMessageOutput;

    fn name(&self) -> &'static str {
        "send_task_message"
    }

    fn description(&self) -> &'static str {
        "Send a message (feedback, a correction, new requirements, an answer…) to one of your \
         tasks. A running executor receives it at once; a queued task gets it with its prompt. \
         When the task is input_required (its executor asks for permission or an answer; see \
         the pending request in get_task_status/get_task_history), answer with message_type \
         approval and message {\"decision\":\"allow\"|\"deny\",\"scope\":\"once\"|\"always\",\
         \"message\":\"…\"} (or just allow / deny). Every message is recorded in the task history."
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            open_world: true,
            ..ToolAnnotations::default()
        }
    }

    async fn call(
        &self,
        _ctx: ToolContext,
        args: SendTaskMessageArgs,
    ) -> Result<SendTaskMessageOutput, ToolError> {
        let agent = caller(self.name(), args.agent_id)?;
        let receipt = self
            .engine
            .message(
                &agent,
                &args.task_id,
                args.message_type.unwrap_or_default(),
                args.message,
                args.metadata.map(Value::Object),
            )
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        Ok(SendTaskMessageOutput {
            task_id: receipt.task.id.to_string(),
            status: receipt.task.status,
            event_seq: receipt.seq,
            delivered: receipt.delivered,
            note: receipt.note,
        })
    }
}
