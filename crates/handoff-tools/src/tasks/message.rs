use handoff_engine::Engine;
use handoff_protocol::{
    names,
    tasks::{SendTaskMessageArgs, SendTaskMessageOutput},
};
use serde_json::Value;

use super::{caller, failure::tool_error, outlook, text};
use crate::{Reply, Tool, ToolAnnotations, ToolContext, ToolError};

/// What agents read: the only place they learn the approval answer's format, so it names
/// exactly what the engine's parser accepts.
const DESCRIPTION: &str = "Send a message (feedback, a correction, new requirements, an \
    answer…) to one of your tasks. A running executor receives it at once; a queued task gets \
    it with its prompt. When the task is input_required (its executor asks for permission or an \
    answer; see the pending request in get_task_status/get_task_history), answer with \
    message_type approval and message {\"decision\":\"allow\"|\"deny\",\"scope\":\"once\"|\
    \"task\"|\"project\",\"patterns\":[\"…\"],\"message\":\"…\",\"request_id\":\"…\"}, where only \
    decision is required: scope once (default) allows this request only, task (or always) also \
    the same permission and subjects for the rest of this task, project also in your later \
    tasks in this project until revoke_approval; patterns, with scope task or project, are \
    wildcards to approve instead of exactly what was asked (e.g. \"ls *\"), each covering \
    something asked; message is your answer to a question or why you deny; request_id answers a \
    pending request other than the oldest. The words allow or deny alone also work. Every \
    message is recorded in the task history.";

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
        names::SEND_TASK_MESSAGE
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            open_world: true,
            ..ToolAnnotations::default()
        }
    }

    async fn call(
        &self,
        ctx: ToolContext,
        args: SendTaskMessageArgs,
    ) -> Result<Reply<SendTaskMessageOutput>, ToolError> {
        let agent = caller(&ctx, self.name())?;
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
        let outlook = outlook(&ctx, &agent, &receipt.task, None);
        let output = SendTaskMessageOutput {
            task_id: receipt.task.id.to_string(),
            status: receipt.task.status,
            event_seq: receipt.seq,
            delivered: receipt.delivered,
            note: receipt.note,
        };
        let text = text::message(&output, &outlook);
        Ok(Reply::new(output, text))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use handoff_protocol::{object_schema_for, tasks::SendTaskMessageArgs};
    use handoff_runner::{Decision, InputAnswer, Scope};

    use super::DESCRIPTION;

    /// Every field and scope the engine's approval parser accepts, as they appear on the wire.
    fn accepted() -> Vec<String> {
        let answer = InputAnswer {
            decision: Decision::Allow,
            scope: Scope::Once,
            message: Some(String::new()),
            request_id: Some(String::new()),
            patterns: vec![String::new()],
        };
        let fields = serde_json::to_value(answer).unwrap();
        let mut words: Vec<String> = fields.as_object().unwrap().keys().cloned().collect();
        for scope in [Scope::Once, Scope::Task, Scope::Project] {
            // A new scope fails to compile here until the description names it.
            match scope {
                Scope::Once | Scope::Task | Scope::Project => {}
            }
            words.push(
                serde_json::to_value(scope)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
        words
    }

    #[test]
    fn the_description_and_schema_name_every_approval_field_and_scope() {
        let schema = object_schema_for::<SendTaskMessageArgs>().unwrap();
        let message_doc = schema["properties"]["message"]["description"]
            .as_str()
            .unwrap();
        for text in [DESCRIPTION, message_doc] {
            for word in accepted() {
                assert!(text.contains(&format!("\"{word}\"")), "{word}: {text}");
            }
        }
    }
}
