use handoff_engine::Engine;
use handoff_protocol::{
    TaskView, names,
    tasks::{LIST_TEXT_MAX_CHARS, ListTasksArgs, ListTasksOutput},
};

use super::{caller, failure::tool_error, text};
use crate::{Reply, Tool, ToolAnnotations, ToolContext, ToolError};

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
        names::LIST_TASKS
    }

    fn description(&self) -> &'static str {
        "List your tasks, newest first, optionally only those in one state or whose description \
         contains a text. Paged with cursor."
    }

    fn annotations(&self) -> ToolAnnotations {
        super::read_only()
    }

    async fn call(
        &self,
        ctx: ToolContext,
        args: ListTasksArgs,
    ) -> Result<Reply<ListTasksOutput>, ToolError> {
        let agent = caller(&ctx, self.name())?;
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
        // The schema says the same; checked here too so no caller reaches the store without it.
        if args
            .text
            .as_deref()
            .is_some_and(|t| t.is_empty() || t.chars().count() > LIST_TEXT_MAX_CHARS)
        {
            return Err(ToolError::InvalidArguments {
                tool: self.name().to_owned(),
                pointer: "/text".to_owned(),
                message: format!("expected 1 to {LIST_TEXT_MAX_CHARS} characters"),
            });
        }
        let page = self
            .engine
            .list_matching(
                &agent,
                args.status.iter().copied().collect(),
                args.limit.unwrap_or(50),
                before,
                args.text.clone(),
            )
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        let output = ListTasksOutput {
            tasks: page.tasks.iter().map(TaskView::from).collect(),
            next_cursor: page.next_before_seq.map(|seq| format!("c{seq}")),
        };
        let seqs: Vec<i64> = page.tasks.iter().map(|t| t.queue_seq).collect();
        let text = text::task_list(&output, &seqs, args.status, args.text.as_deref());
        Ok(Reply::new(output, text))
    }
}
