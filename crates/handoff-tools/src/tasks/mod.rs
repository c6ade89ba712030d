//! The task tools: thin adapters from validated arguments to the task engine, and from engine
//! results to the views agents read. Names are kept from the older server so existing agents
//! keep working.

mod approvals;
mod audit;
mod control;
mod execute;
mod failure;
mod files;
mod history;
mod list;
mod message;
mod status;
mod views;

use std::time::Duration;

use handoff_engine::Engine;

pub use approvals::{ListApprovalsTool, RevokeApprovalTool};
pub use audit::GetAuditLogTool;
pub use control::{ControlAction, SendTaskControlTool};
pub use execute::{ExecuteTaskOutput, ExecuteTaskTool};
pub use files::{GetTaskFilesTool, ReadTaskFileTool};
pub use history::GetTaskHistoryTool;
pub use list::ListTasksTool;
pub use message::SendTaskMessageTool;
pub use status::GetTaskStatusTool;
pub(crate) use views::clip;
pub use views::{EventView, TaskView};

use crate::{AgentId, RegistryError, ToolError, ToolRegistry};

/// Registers every task tool against `engine`; `sync_wait` bounds `execute_task {sync: true}`.
pub fn register(
    registry: &mut ToolRegistry,
    engine: &Engine,
    sync_wait: Duration,
    async_allowed: bool,
) -> Result<(), RegistryError> {
    registry
        .register(ExecuteTaskTool::new(
            engine.clone(),
            sync_wait,
            async_allowed,
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

/// The calling agent: the `agent_id` argument (the pipeline fills it from `x-agent-id`).
fn caller(tool: &str, agent: Option<AgentId>) -> Result<AgentId, ToolError> {
    agent.ok_or_else(|| ToolError::InvalidArguments {
        tool: tool.to_owned(),
        pointer: "/agent_id".to_owned(),
        message: "required: pass agent_id or send the x-agent-id header".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde_json::{Value, json};

    use super::*;
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
                "execute_task",
                schemas::<execute::ExecuteTaskArgs, execute::ExecuteTaskOutput>(),
            ),
            (
                "get_task_status",
                schemas::<status::GetTaskStatusArgs, status::GetTaskStatusOutput>(),
            ),
            (
                "get_task_history",
                schemas::<history::GetTaskHistoryArgs, history::GetTaskHistoryOutput>(),
            ),
            (
                "list_tasks",
                schemas::<list::ListTasksArgs, list::ListTasksOutput>(),
            ),
            (
                "send_task_message",
                schemas::<message::SendTaskMessageArgs, message::SendTaskMessageOutput>(),
            ),
            (
                "send_task_control",
                schemas::<control::SendTaskControlArgs, control::SendTaskControlOutput>(),
            ),
            (
                "get_task_files",
                schemas::<files::GetTaskFilesArgs, files::GetTaskFilesOutput>(),
            ),
            (
                "read_task_file",
                schemas::<files::ReadTaskFileArgs, files::ReadTaskFileOutput>(),
            ),
            (
                "list_approvals",
                schemas::<approvals::ListApprovalsArgs, approvals::ListApprovalsOutput>(),
            ),
            (
                "revoke_approval",
                schemas::<approvals::RevokeApprovalArgs, approvals::RevokeApprovalOutput>(),
            ),
            (
                "get_audit_log",
                schemas::<audit::GetAuditLogArgs, audit::GetAuditLogOutput>(),
            ),
        ] {
            insta::assert_json_snapshot!(format!("{name}_schema"), value);
        }
    }

    #[test]
    fn inputs_are_closed_and_outputs_are_objects() {
        let value = schemas::<execute::ExecuteTaskArgs, execute::ExecuteTaskOutput>();
        assert_eq!(value["input"]["additionalProperties"], false);
        assert_eq!(value["input"]["required"], json!(["task_description"]));
        assert_eq!(value["output"]["type"], "object");
    }
}
