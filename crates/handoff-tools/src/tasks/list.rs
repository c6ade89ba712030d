use handoff_engine::Engine;
use handoff_task::TaskStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{TaskView, caller, failure::tool_error};
use crate::{AgentId, Tool, ToolAnnotations, ToolContext, ToolError};

/// Arguments of `list_tasks`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTasksArgs {
    /// Calling agent (defaults to the x-agent-id header); only its tasks are listed.
    pub agent_id: Option<AgentId>,
    /// Only tasks in this state.
    pub status: Option<TaskStatus>,
    /// Page size (default 50, at most 200).
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    #[schemars(regex(pattern = r"^c[0-9]{1,19}$"))]
    pub cursor: Option<String>,
}

/// Result of `list_tasks`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListTasksOutput {
    /// Tasks, newest first.
    pub tasks: Vec<TaskView>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `list_tasks`: your tasks, newest first, paged.
pub struct ListTasksTool {
    engine: Engine,
}

impl ListTasksTool {
    /// A tool reading from `engine`.
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }
}

impl Tool for ListTasksTool {
    type Args = ListTasksArgs;
    type Output = ListTasksOutput;

    fn name(&self) -> &'static str {
        "list_tasks"
    }

    fn description(&self) -> &'static str {
        "List your tasks, newest first, optionally only those in one state. Paged with cursor."
    }

    fn annotations(&self) -> ToolAnnotations {
        super::read_only()
    }

    async fn call(
        &self,
        _ctx: ToolContext,
        args: ListTasksArgs,
    ) -> Result<ListTasksOutput, ToolError> {
        let agent = caller(self.name(), args.agent_id)?;
        let before = match args.cursor.as_deref() {
            None => None,
            Some(cursor) => Some(
                cursor
                    .strip_prefix('c')
                    .and_then(|n| n.parse::<i64>().ok())
                    .ok_or_else(|| ToolError::InvalidArguments {
                        tool: self.name().to_owned(),
                        pointer: "/cursor".to_owned(),
                        message: "not a cursor returned by list_tasks".to_owned(),
                    })?,
            ),
        };
        let page = self
            .engine
            .list(
                &agent,
                args.status.into_iter().collect(),
                args.limit.unwrap_or(50),
                before,
            )
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        Ok(ListTasksOutput {
            tasks: page.tasks.iter().map(TaskView::from).collect(),
            next_cursor: page.next_before_seq.map(|seq| format!("c{seq}")),
        })
    }
}
