//! The task tools: thin adapters from validated arguments to the task engine, and from engine
//! results to the views agents read. The arguments, results and views themselves are wire types
//! in `handoff-protocol`; names are kept from the older server so existing agents keep working.

mod approvals;
mod artifact_part;
mod audit;
mod closing;
mod continue_task;
mod control;
mod execute;
mod failure;
mod files;
mod history;
mod list;
mod message;
mod repeats;
mod status;
mod text;

use std::time::Duration;

use handoff_engine::Engine;

pub use approvals::{ListApprovalsTool, RevokeApprovalTool};
pub use audit::GetAuditLogTool;
pub use control::SendTaskControlTool;
pub use execute::ExecuteTaskTool;
pub(crate) use execute::finished_output;
pub use files::{GetTaskFilesTool, ReadTaskFileTool};
pub use history::GetTaskHistoryTool;
pub use list::ListTasksTool;
pub use message::SendTaskMessageTool;
pub use repeats::{JUDGE_OWN_REPEATS, RepeatedSubmissions};
// The wire types these tools speak, where they were before `handoff-protocol` existed.
pub use handoff_protocol::{
    EventView, TaskView,
    tasks::{ControlAction, ExecuteTaskOutput},
};
pub use status::GetTaskStatusTool;

/// The executor agent's final answer to finished task `id`, as `get_task_status` gives it
/// (`None` before the task ends or when the agent wrote no text); for integrations that
/// report outcomes elsewhere.
pub async fn final_answer(
    engine: &handoff_engine::Engine,
    caller: &handoff_task::Principal,
    id: &handoff_task::TaskId,
) -> Result<Option<String>, handoff_engine::EngineError> {
    Ok(closing::closing(engine, caller, id)
        .await?
        .answer
        .filter(|a| !a.trim().is_empty()))
}

use handoff_task::{Principal, Task};

use crate::{RegistryError, ToolContext, ToolError, ToolRegistry};

/// Registers every task tool against `engine`; `sync_wait` bounds `execute_task {sync: true}`,
/// `repeats` judges identical submissions (the pipeline's loop guard must leave
/// [`JUDGE_OWN_REPEATS`] to it).
pub fn register(
    registry: &mut ToolRegistry,
    engine: &Engine,
    sync_wait: Duration,
    async_allowed: bool,
    repeats: RepeatedSubmissions,
) -> Result<(), RegistryError> {
    registry
        .register(ExecuteTaskTool::new(
            engine.clone(),
            sync_wait,
            async_allowed,
            repeats,
        ))?
        .register(GetTaskStatusTool::new(engine.clone()))?
        .register(GetTaskHistoryTool::new(engine.clone()))?
        .register(ListTasksTool::new(engine.clone()))?
        .register(SendTaskMessageTool::new(engine.clone()))?
        .register(SendTaskControlTool::new(engine.clone()))?
        .register(GetTaskFilesTool::new(engine.clone()))?
        .register(ReadTaskFileTool::new(engine.clone()))?
        .register(ListApprovalsTool::new(engine.clone()))?
        .register(RevokeApprovalTool::new(engine.clone()))?
        .register(GetAuditLogTool::new(engine.clone()))?;
    Ok(())
}

/// Hints of the tools that only read.
fn read_only() -> crate::ToolAnnotations {
    crate::ToolAnnotations {
        read_only: true,
        idempotent: true,
        ..crate::ToolAnnotations::default()
    }
}

/// The caller, as the pipeline settled it in the context; a task tool needs one.
fn caller(ctx: &ToolContext, tool: &str) -> Result<Principal, ToolError> {
    ctx.principal().ok_or_else(|| ToolError::InvalidArguments {
        tool: tool.to_owned(),
        pointer: "/agent_id".to_owned(),
        message: "required: send the x-agent-id header (or pass agent_id where no identity is established)".to_owned(),
    })
}

/// What a task's text can tell `caller` beyond the output: what it hears about the task
/// without asking (only the owner is told anything) and, once it ended, its closing text.
fn outlook(
    ctx: &ToolContext,
    caller: &Principal,
    task: &Task,
    answer: Option<String>,
) -> text::Outlook {
    let follow_up = match caller {
        Principal::Agent(agent) if *agent == task.agent_id => ctx.follow_up(task),
        _ => crate::FollowUp::default(),
    };
    text::Outlook { follow_up, answer }
}

#[cfg(test)]
mod tests {
    use handoff_protocol::{names, tasks::*};
    use schemars::JsonSchema;
    use serde_json::{Value, json};

    use crate::schema::object_schema_for;

    fn schemas<A: JsonSchema, O: JsonSchema>() -> Value {
        json!({
            "input": object_schema_for::<A>().unwrap(),
            "output": object_schema_for::<O>().unwrap(),
        })
    }

    /// Golden schemas: a change to a task tool's wire contract shows up in review.
    #[test]
    fn task_tool_schemas_are_stable() {
        for (name, value) in [
            (
                names::EXECUTE_TASK,
                schemas::<ExecuteTaskArgs, ExecuteTaskOutput>(),
            ),
            (
                names::GET_TASK_STATUS,
                schemas::<GetTaskStatusArgs, GetTaskStatusOutput>(),
            ),
            (
                names::GET_TASK_HISTORY,
                schemas::<GetTaskHistoryArgs, GetTaskHistoryOutput>(),
            ),
            (
                names::LIST_TASKS,
                schemas::<ListTasksArgs, ListTasksOutput>(),
            ),
            (
                names::SEND_TASK_MESSAGE,
                schemas::<SendTaskMessageArgs, SendTaskMessageOutput>(),
            ),
            (
                names::SEND_TASK_CONTROL,
                schemas::<SendTaskControlArgs, SendTaskControlOutput>(),
            ),
            (
                names::GET_TASK_FILES,
                schemas::<GetTaskFilesArgs, GetTaskFilesOutput>(),
            ),
            (
                names::READ_TASK_FILE,
                schemas::<ReadTaskFileArgs, ReadTaskFileOutput>(),
            ),
            (
                names::LIST_APPROVALS,
                schemas::<ListApprovalsArgs, ListApprovalsOutput>(),
            ),
            (
                names::REVOKE_APPROVAL,
                schemas::<RevokeApprovalArgs, RevokeApprovalOutput>(),
            ),
            (
                names::GET_AUDIT_LOG,
                schemas::<GetAuditLogArgs, GetAuditLogOutput>(),
            ),
        ] {
            insta::assert_json_snapshot!(format!("{name}_schema"), value);
        }
    }

    #[test]
    fn inputs_are_closed_and_outputs_are_objects() {
        let value = schemas::<ExecuteTaskArgs, ExecuteTaskOutput>();
        assert_eq!(value["input"]["additionalProperties"], false);
        assert_eq!(value["input"]["required"], json!(["task_description"]));
        assert_eq!(value["output"]["type"], "object");
    }
}
