use handoff_engine::Engine;
use handoff_protocol::{
    EventView, TaskView, names,
    tasks::{ARTIFACT_VIEW_BYTES, ArtifactView, GetTaskHistoryArgs, GetTaskHistoryOutput},
};
use handoff_task::{Artifact, ArtifactBody, ArtifactKind, FileStat, Principal, diff_stat_of_body};

use super::{artifact_part, caller, failure::tool_error, text};
use crate::{Reply, Tool, ToolAnnotations, ToolContext, ToolError};

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
        names::GET_TASK_HISTORY
    }

    fn description(&self) -> &'static str {
        "Everything recorded about one of your tasks, paged: state changes, executor output and \
         progress, messages and controls, in order; optionally the full stored outputs, or \
         one of them (`artifact`) paged by byte offset."
    }

    fn annotations(&self) -> ToolAnnotations {
        super::read_only()
    }

    async fn call(
        &self,
        ctx: ToolContext,
        args: GetTaskHistoryArgs,
    ) -> Result<Reply<GetTaskHistoryOutput>, ToolError> {
        let agent = caller(&ctx, self.name())?;
        if let Some(kind) = args.artifact {
            return self.artifact_part(&ctx, &agent, &args, kind).await;
        }
        if args.artifact_offset.is_some() {
            return Err(self.invalid(
                "/artifact_offset",
                "needs `artifact`: the stored output to read".to_owned(),
            ));
        }
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
        let output = GetTaskHistoryOutput {
            task: TaskView::from(&history.task),
            has_more: offset.saturating_add(history.events.len() as u64) < history.total_events,
            events: history.events.iter().map(EventView::from).collect(),
            total_events: history.total_events,
            events_offset: offset,
            artifacts,
        };
        let text = text::history(&output);
        Ok(Reply::new(output, text))
    }
}

impl GetTaskHistoryTool {
    /// An argument error at `pointer`.
    fn invalid(&self, pointer: &str, message: String) -> ToolError {
        ToolError::InvalidArguments {
            tool: self.name().to_owned(),
            pointer: pointer.to_owned(),
            message,
        }
    }

    /// `artifact` given: that one stored output from `artifact_offset`, in a part that passes
    /// the output cap whole, and no events.
    async fn artifact_part(
        &self,
        ctx: &ToolContext,
        agent: &Principal,
        args: &GetTaskHistoryArgs,
        kind: ArtifactKind,
    ) -> Result<Reply<GetTaskHistoryOutput>, ToolError> {
        let events_offset = args.events_offset.unwrap_or(0);
        let history = self
            .engine
            .history(agent, &args.task_id, events_offset, 0, true)
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        let task = TaskView::from(&history.task);
        let output = |artifacts: Vec<ArtifactView>| GetTaskHistoryOutput {
            task: task.clone(),
            events: Vec::new(),
            total_events: history.total_events,
            events_offset,
            has_more: events_offset < history.total_events,
            artifacts: Some(artifacts),
        };
        let Some(stored) = history.artifacts.iter().find(|a| a.kind == kind) else {
            let out = output(Vec::new());
            let text = text::artifact_part(&out, kind);
            return Ok(Reply::new(out, text));
        };
        let offset = args.artifact_offset.unwrap_or(0);
        if offset > stored.size {
            return Err(self.invalid(
                "/artifact_offset",
                format!("past the end of the stored {kind} ({} bytes)", stored.size),
            ));
        }
        let bytes = artifact_part::read_at(&stored.body, offset, ARTIFACT_VIEW_BYTES)
            .await
            .map_err(|e| ToolError::Internal {
                message: format!("reading the stored {kind} artifact: {e}"),
            })?;
        let part = artifact_part::fitted(stored, offset, &bytes, ctx.output_limits(), |view| {
            let out = output(vec![view.clone()]);
            let text = text::artifact_part(&out, kind);
            (serde_json::to_value(&out).unwrap_or_default(), text)
        });
        let out = output(vec![part]);
        let text = text::artifact_part(&out, kind);
        Ok(Reply::new(out, text))
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
    let diff_stat = match artifact.kind {
        ArtifactKind::Diff => Some(whole_diff_stat(&artifact.body).await?),
        _ => None,
    };
    Ok(ArtifactView {
        kind: artifact.kind,
        size: artifact.size,
        capped: artifact.capped,
        truncated: (head.len() as u64) < artifact.size,
        content: String::from_utf8_lossy(&head).into_owned(),
        diff_stat,
        offset: None,
        next_offset: None,
    })
}

/// The stat of the whole stored diff, off the async threads.
async fn whole_diff_stat(body: &ArtifactBody) -> std::io::Result<Vec<FileStat>> {
    let body = body.clone();
    tokio::task::spawn_blocking(move || diff_stat_of_body(&body))
        .await
        .map_err(std::io::Error::other)?
}
