//! The Matrix integration as an engine plug-in: the engine's notices drive the room posters,
//! the posters read tasks through the engine's public queries, and commands from the rooms
//! go through the tool pipeline as the Matrix sender (an operator principal named after it),
//! audited like any MCP call.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use async_trait::async_trait;
use handoff_config::Config;
use handoff_engine::{Engine, EngineError, Integration};
use handoff_matrix::{Command, MatrixBridge, MatrixMeter, Scope as MatrixScope, Steering};
use handoff_protocol::tasks::{AnswerScope, ApprovalAnswer};
use handoff_store::ChannelStore;
use handoff_task::{MatrixUserId, Task, TaskId, TaskStatus};
use handoff_tools::{CallRequest, Pipeline, ToolContext};
use serde_json::{Map, Value, json};

use super::source::EngineSource;

/// The name the integration reads under (its principal, in histories and logs).
const ACTOR: &str = "handoff-matrix";

/// Matrix rooms per task, plugged into the engine.
pub(crate) struct MatrixPlugin {
    bridge: MatrixBridge,
}

impl MatrixPlugin {
    /// Starts the integration when the homeserver and token are set.
    pub(crate) fn start(
        config: &Config,
        engine: &Engine,
        store: Arc<dyn ChannelStore>,
        meter: Arc<dyn MatrixMeter>,
    ) -> Result<Option<Self>, EngineError> {
        if !config.matrix.enabled() {
            return Ok(None);
        }
        let source = Arc::new(EngineSource::new(engine, ACTOR, "Matrix")?);
        let bridge = MatrixBridge::start(config.matrix.clone(), store, source, meter)
            .map_err(|e| EngineError::Internal(format!("matrix: {e}")))?;
        Ok(Some(Self { bridge }))
    }

    /// The running integration.
    pub(crate) fn bridge(&self) -> &MatrixBridge {
        &self.bridge
    }
}

#[async_trait]
impl Integration for MatrixPlugin {
    async fn task_started(&self, task: &Task) {
        self.bridge.task_started(task);
    }

    fn events_appended(&self, task: &TaskId) {
        self.bridge.touch(task, false);
    }

    fn status_changed(&self, task: &TaskId, _: TaskStatus) {
        self.bridge.touch(task, true);
    }

    async fn shutdown(&self) {
        self.bridge.shutdown().await;
    }
}

/// Commands from rooms as tool calls through the pipeline.
pub(crate) struct PipelineSteering {
    pipeline: Pipeline,
    calls: AtomicU64,
}

impl PipelineSteering {
    /// Steering through `pipeline`.
    pub(crate) fn new(pipeline: Pipeline) -> Self {
        Self {
            pipeline,
            calls: AtomicU64::new(0),
        }
    }
}

#[async_trait]
impl Steering for PipelineSteering {
    async fn steer(
        &self,
        sender: &MatrixUserId,
        task: &TaskId,
        command: &Command,
    ) -> Result<String, String> {
        let (tool, arguments, field) = tool_call(sender, task, command)?;
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let call_id = format!("matrix-{}-{n}", handoff_task::unix_millis_now());
        let ctx = ToolContext::new(call_id.clone(), call_id)
            .with_agent(Some(handoff_matrix::acting_name(sender)))
            .with_operator(true);
        let request = CallRequest {
            name: tool.to_owned(),
            arguments: Some(arguments),
        };
        match self.pipeline.call(ctx, request).await {
            Ok(output) => Ok(output
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or("done")
                .to_owned()),
            Err(e) => Err(handoff_matrix::html::one_line(&e.to_string(), 400)),
        }
    }
}

/// The tool, its arguments and the output field to report for `command`.
fn tool_call(
    sender: &MatrixUserId,
    task: &TaskId,
    command: &Command,
) -> Result<(&'static str, Map<String, Value>, &'static str), String> {
    let from = format!("from Matrix, {sender}");
    let control = |action: &str| {
        let args = json!({"task_id": task.as_str(), "control": action, "reason": from});
        (handoff_protocol::names::SEND_TASK_CONTROL, args, "message")
    };
    let approval = |answer: ApprovalAnswer, request: &str| {
        let answer = answer.for_request(Some(request.to_owned()));
        let args = json!({
            "task_id": task.as_str(),
            "message": answer.to_message(),
            "message_type": "approval",
            "metadata": {"matrix_sender": sender.as_str()},
        });
        (handoff_protocol::names::SEND_TASK_MESSAGE, args, "note")
    };
    let (tool, args, field) = match command {
        Command::Cancel => control("cancel"),
        Command::Pause => control("pause"),
        Command::Resume => control("resume"),
        Command::Approve { request, scope } => {
            let scope = match scope {
                MatrixScope::Once => AnswerScope::Once,
                MatrixScope::Task => AnswerScope::Task,
                MatrixScope::Project => AnswerScope::Project,
            };
            approval(ApprovalAnswer::allow(scope), request)
        }
        Command::Deny { request } => approval(ApprovalAnswer::deny(), request),
        Command::Message(text) => {
            let args = json!({
                "task_id": task.as_str(),
                "message": text,
                "metadata": {"matrix_sender": sender.as_str()},
            });
            (handoff_protocol::names::SEND_TASK_MESSAGE, args, "note")
        }
        Command::Help => return Err("!help is answered in the room".to_owned()),
    };
    match args {
        Value::Object(map) => Ok((tool, map, field)),
        _ => Err("internal: arguments are not an object".to_owned()),
    }
}
