//! The task tools: thin adapters from validated arguments to the task engine, and from engine
//! results to the views agents read. Names are kept from the older server so existing agents
//! keep working.

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

pub use control::{ControlAction, SendTaskControlTool};
pub use execute::ExecuteTaskTool;
pub use files::{GetTaskFilesTool, ReadTaskFileTool};
pub use history::GetTaskHistoryTool;
pub use list::ListTasksTool;
pub use message::SendTaskMessageTool;
pub use status::GetTaskStatusTool;
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
        .register(ReadTaskFileTool::new(engine.clone()))?;
    Ok(())
}

/// The calling agent: the `agent_id` argument (the pipeline fills it from `x-agent-id`).
fn caller(tool: &str, agent: Option<AgentId>) -> Result<AgentId, ToolError> {
    agent.ok_or_else(|| ToolError::InvalidArguments {
        tool: tool.to_owned(),
        pointer: "/agent_id".to_owned(),
        message: "required: pass agent_id or send the x-agent-id header".to_owned(),
    })
}
