use handoff_engine::Engine;
use handoff_task::{Artifact, ArtifactBody, ArtifactKind, TaskId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{EventView, TaskView, caller, failure::tool_error};
use crate::{AgentId, Tool, ToolAnnotations, ToolContext, ToolError};

/// Bytes of an artifact shown inline; the rest is reported, never silently dropped.
const ARTIFACT_VIEW_BYTES: u64 = 64 << 10;

/// Arguments of `get_task_history`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTaskHistoryArgs {
    /// Calling agent (defaults to the x-agent-id header).
    pub agent_id: Option<AgentId>,
    /// The task.
    pub task_id: TaskId,
    /// Events to skip (default 0).
    #[schemars(range(min = 0))]
    pub events_offset: Option<u64>,
    /// Events to return (default 100, at most 1000).
    #[schemars(range(min = 1, max = 1000))]
    pub events_limit: Option<u32>,
    /// Also return the stored outputs (first 64 KiB of each, with their full size).
    pub include_artifacts: Option<bool>,
}

/// A stored output as shown.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ArtifactView {
    /// What it holds.
    pub kind: ArtifactKind,
    /// Full size in bytes.
    pub size: u64,
    /// The executor produced more than the server keeps (tasks.artifact_max_bytes).
    pub capped: bool,
    /// The first 64 KiB (lossy UTF-8).
    pub content: String,
    /// `content` is only the beginning.
    pub truncated: bool,
}

/// Result of `get_task_history`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GetTaskHistoryOutput {
    /// The task.
    pub task: TaskView,
    /// The requested page of events, in order.
    pub events: Vec<EventView>,
    /// Events recorded in total.
    pub total_events: u64,
    /// Offset of this page.
    pub events_offset: u64,
    /// More events follow this page.
    pub has_more: bool,
    /// Stored outputs (when asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<ArtifactView>>,
}

/// `get_task_history`: the full, paged record of a task.
pub struct GetTaskHistoryTool {
    engine: Engine,
}

impl GetTaskHistoryTool {
    /// A tool reading from `engine`.
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }
}

impl Tool for GetTaskHistoryTool {
    type Args = GetTaskHistoryArgs;
    type Output = GetTaskHistoryOutput;

    fn name(&self) -> &'static str {
        "get_task_history"
    }

    fn description(&self) -> &'static str {
        "Everything recorded about one of your tasks, paged: state changes, executor output and \
         progress, messages and controls, in order; optionally the full stored outputs."
    }

    fn annotations(&self) -> ToolAnnotations {
        super::read_only()
    }

    async fn call(
        &self,
        _ctx: ToolContext,
        args: GetTaskHistoryArgs,
    ) -> Result<GetTaskHistoryOutput, ToolError> {
        let agent = caller(self.name(), args.agent_id)?;
        let offset = args.events_offset.unwrap_or(0);
        let include = args.include_artifacts.unwrap_or(false);
        let history = self
            .engine
            .history(
                &agent,
                &args.task_id,
                offset,
                args.events_limit.unwrap_or(100),
                include,
            )
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        let artifacts = if include {
            let mut views = Vec::with_capacity(history.artifacts.len());
            for artifact in &history.artifacts {
                views.push(view(artifact).await.map_err(|e| ToolError::Internal {
                    message: format!("reading the stored {} artifact: {e}", artifact.kind),
                })?);
            }
            Some(views)
        } else {
            None
        };
        Ok(GetTaskHistoryOutput {
            task: TaskView::from(&history.task),
            has_more: offset.saturating_add(history.events.len() as u64) < history.total_events,
            events: history.events.iter().map(EventView::from).collect(),
            total_events: history.total_events,
            events_offset: offset,
            artifacts,
        })
    }
}

async fn view(artifact: &Artifact) -> std::io::Result<ArtifactView> {
    use tokio::io::AsyncReadExt;
    let head = match &artifact.body {
        ArtifactBody::Inline(bytes) => {
            bytes[..bytes.len().min(ARTIFACT_VIEW_BYTES as usize)].to_vec()
        }
        ArtifactBody::File(path) => {
            let file = tokio::fs::File::open(path).await?;
            let mut head = Vec::new();
            file.take(ARTIFACT_VIEW_BYTES)
                .read_to_end(&mut head)
                .await?;
            head
        }
    };
    Ok(ArtifactView {
        kind: artifact.kind,
        size: artifact.size,
        capped: artifact.capped,
        truncated: (head.len() as u64) < artifact.size,
        content: String::from_utf8_lossy(&head).into_owned(),
    })
}
