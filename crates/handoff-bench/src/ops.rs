//! The operations the generator sends, as JSON-RPC bodies.

use serde_json::{Value, json};

/// Tasks per `list_tasks` page; the run stores at least this many before its first step, so
/// every step lists a full page (at N=1 as at N=16) and the rows compare.
pub(crate) const LIST_PAGE: usize = 20;

/// One kind of request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// `tools/call ping`.
    Ping,
    /// `tools/list`.
    ToolsList,
    /// The protocol's own `ping` request (no tool involved).
    RpcPing,
    /// `tools/call get_task_status` of an existing task.
    GetTaskStatus,
    /// `tools/call list_tasks`.
    ListTasks,
    /// `tools/call execute_task` (the `command` executor runs `true`).
    ExecuteTask,
    /// `tools/call health` (used between steps, not measured).
    Health,
}

impl Op {
    /// The op's name in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Ping => "ping",
            Op::ToolsList => "tools/list",
            Op::RpcPing => "ping (rpc)",
            Op::GetTaskStatus => "get_task_status",
            Op::ListTasks => "list_tasks",
            Op::ExecuteTask => "execute_task",
            Op::Health => "health",
        }
    }

    /// JSON-RPC method and, for tool calls, the tool name (the 2026-07-28 headers need both).
    pub(crate) fn method(self) -> (&'static str, Option<&'static str>) {
        match self {
            Op::ToolsList => ("tools/list", None),
            Op::RpcPing => ("ping", None),
            Op::Ping => ("tools/call", Some("ping")),
            Op::GetTaskStatus => ("tools/call", Some("get_task_status")),
            Op::ListTasks => ("tools/call", Some("list_tasks")),
            Op::ExecuteTask => ("tools/call", Some("execute_task")),
            Op::Health => ("tools/call", Some("health")),
        }
    }

    /// The request's params.
    pub(crate) fn params(self, task_id: &str) -> Value {
        match self {
            Op::ToolsList | Op::RpcPing => json!({}),
            Op::Ping => json!({"name": "ping", "arguments": {"message": "bench"}}),
            Op::GetTaskStatus => {
                json!({"name": "get_task_status", "arguments": {"task_id": task_id}})
            }
            Op::ListTasks => json!({"name": "list_tasks", "arguments": {"limit": LIST_PAGE}}),
            Op::ExecuteTask => {
                // Distinct tasks, as real submissions are (identical repeats meet the loop guard).
                static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                json!({"name": "execute_task", "arguments": {"task_description": format!("bench {n}")}})
            }
            Op::Health => json!({"name": "health", "arguments": {}}),
        }
    }
}
