//! Every argument and result type reads what it writes, and writes exactly the JSON the
//! server reads and sends (no extra nulls, no renamed fields).

use std::{any::type_name, collections::HashSet, fmt::Debug};

use pretty_assertions::assert_eq;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

use handoff_task::{PermissionAction, PermissionRule};

use crate::{AgentId, TaskId, ToolCall, ToolErrorMeta, builtin::*, codes, names, tasks::*};

const TASK: &str = "task_abcdefghijklmnopqrstuvwxyz";

/// Reads `json` as a `T`, checks it writes back the same JSON and reads back the same value.
fn wire<T>(json: Value) -> T
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let value: T = serde_json::from_value(json.clone())
        .unwrap_or_else(|e| panic!("{} from {json}: {e}", type_name::<T>()));
    let written = serde_json::to_value(&value).unwrap();
    assert_eq!(written, json, "{} writes what it read", type_name::<T>());
    let again: T = serde_json::from_value(written).unwrap();
    assert_eq!(again, value, "{} reads what it wrote", type_name::<T>());
    value
}

fn task_view() -> Value {
    json!({
        "task_id": TASK, "status": "completed", "executor": "opencode",
        "description": "fix the tests", "priority": 5, "workdir": "/w/t",
        "created_at_ms": 1, "started_at_ms": 2, "completed_at_ms": 3, "duration_ms": 1,
        "exit": {"code": 0}, "error": "none really", "idempotency_key": "k1",
        "metadata": {"ticket": 7}
    })
}

fn event_view() -> Value {
    json!({"seq": 1, "at_ms": 2, "kind": "output", "message": "ok", "data": {"stream": "stdout"}})
}

fn approval() -> Value {
    json!({
        "id": "ap_0123456789abcdef0123456789abcdef", "agent_id": "agent-1", "scope": "task",
        "task_id": TASK, "project": "/w", "permission": "bash", "pattern": "cargo test",
        "created_at": 9
    })
}

#[test]
fn execute_task_arguments() {
    let full = wire::<ExecuteTaskArgs>(json!({
        "agent_id": "agent-1", "task_description": "fix the tests", "executor": "opencode",
        "workdir": "/w", "idempotency_key": "k1", "timeout_ms": 60000, "sync": true,
        "priority": -3, "observers": ["agent-2", "@u:example.org"], "metadata": {"ticket": 7},
        "requeue_on_restart": false, "notify": false,
        "permissions": [
            {"permission": "bash", "pattern": "rm *", "action": "deny"},
            {"permission": "webfetch", "action": "ask"}
        ],
        "completion": {
            "policy": "judge", "verify_commands": ["cargo test"], "requires_changes": true,
            "success_criteria": ["tests pass"], "max_cycles": 3,
            "budget": {"wall_ms": 1000, "turns": 2, "tokens": 30, "cost_usd": 0.5},
            "protected_paths": ["tests/", "Makefile"], "protected_changes_expected": false
        }
    }));
    assert_eq!(
        full.observers,
        Some(vec![
            handoff_task::ObserverId::Agent(AgentId::parse("agent-2").unwrap()),
            handoff_task::ObserverId::Matrix(
                handoff_task::MatrixUserId::parse("@u:example.org").unwrap()
            ),
        ])
    );
    let minimal = wire::<ExecuteTaskArgs>(json!({"task_description": "fix the tests"}));
    assert_eq!(
        minimal,
        ExecuteTaskArgs {
            task_description: "fix the tests".into(),
            ..ExecuteTaskArgs::default()
        }
    );
}

#[test]
fn arguments_stay_closed_and_validated() {
    let unknown = json!({"task_description": "x", "surprise": 1});
    assert!(serde_json::from_value::<ExecuteTaskArgs>(unknown).is_err());
    let bad_agent = json!({"task_description": "x", "agent_id": "not ok"});
    assert!(serde_json::from_value::<ExecuteTaskArgs>(bad_agent).is_err());
    let bad_task = json!({"task_id": "task_1"});
    assert!(serde_json::from_value::<GetTaskStatusArgs>(bad_task).is_err());
}

#[test]
fn task_tool_arguments() {
    wire::<GetTaskStatusArgs>(json!({"agent_id": "a", "task_id": TASK}));
    wire::<GetTaskStatusArgs>(json!({"task_id": TASK}));
    wire::<GetTaskHistoryArgs>(json!({
        "agent_id": "a", "task_id": TASK, "events_offset": 10, "events_limit": 20,
        "include_artifacts": true
    }));
    wire::<GetTaskHistoryArgs>(json!({"task_id": TASK}));
    wire::<ListTasksArgs>(
        json!({"agent_id": "a", "status": "input_required", "limit": 5, "cursor": "c12"}),
    );
    wire::<ListTasksArgs>(json!({}));
    wire::<SendTaskMessageArgs>(json!({
        "agent_id": "a", "task_id": TASK, "message": "allow", "message_type": "approval",
        "metadata": {"k": "v"}
    }));
    wire::<SendTaskMessageArgs>(json!({"task_id": TASK, "message": "hi"}));
    for control in ["cancel", "pause", "resume"] {
        wire::<SendTaskControlArgs>(json!({"task_id": TASK, "control": control}));
    }
    wire::<SendTaskControlArgs>(
        json!({"agent_id": "a", "task_id": TASK, "control": "cancel", "reason": "done"}),
    );
    wire::<GetTaskFilesArgs>(json!({"agent_id": "a", "task_id": TASK, "path": "src"}));
    wire::<GetTaskFilesArgs>(json!({"task_id": TASK}));
    wire::<ReadTaskFileArgs>(json!({
        "agent_id": "a", "task_id": TASK, "file_path": "src/lib.rs", "offset": 0,
        "max_bytes": 100
    }));
    wire::<ReadTaskFileArgs>(json!({"task_id": TASK, "file_path": "a"}));
    wire::<ListApprovalsArgs>(json!({"agent_id": "a", "task_id": TASK}));
    wire::<ListApprovalsArgs>(json!({}));
    wire::<RevokeApprovalArgs>(
        json!({"agent_id": "a", "approval_id": "ap_0123456789abcdef0123456789abcdef"}),
    );
    wire::<GetAuditLogArgs>(json!({"agent_id": "a", "task_id": TASK, "before_seq": 9, "limit": 3}));
    wire::<GetAuditLogArgs>(json!({}));
}

#[test]
fn task_tool_outputs() {
    wire::<ExecuteTaskOutput>(json!({
        "task_id": TASK, "status": "failed", "created": true, "executor": "opencode",
        "workdir": "/w", "queue_position": 2, "message": "task: failed", "duration_ms": 5,
        "exit": {"code": 3}, "error": "tests failed", "output_tail": ["line"]
    }));
    wire::<ExecuteTaskOutput>(json!({
        "task_id": TASK, "status": "queued", "created": false, "executor": "opencode",
        "workdir": "/w", "message": "accepted", "output_tail": []
    }));
    let mut status = task_view();
    status.as_object_mut().unwrap().extend(
        json!({
            "queue_position": 1,
            "recent_events": [event_view()],
            "pending_input": [{
                "request_id": "r1", "kind": "permission", "permission": "bash",
                "patterns": ["rm -rf x"], "title": "run rm", "detail": {"command": "rm -rf x"}
            }],
            "completion": {"status": "done", "cycles": 1}
        })
        .as_object()
        .unwrap()
        .clone(),
    );
    let read = wire::<GetTaskStatusOutput>(status);
    assert_eq!(read.task.task_id, TASK);
    wire::<GetTaskStatusOutput>(json!({
        "task_id": TASK, "status": "queued", "executor": "e", "description": "d",
        "priority": 0, "workdir": "/w", "created_at_ms": 1, "metadata": null,
        "recent_events": [], "pending_input": []
    }));
    wire::<GetTaskHistoryOutput>(json!({
        "task": task_view(), "events": [event_view()], "total_events": 3, "events_offset": 0,
        "has_more": true,
        "artifacts": [{"kind": "output", "size": 10, "capped": false, "content": "hello",
                       "truncated": true}]
    }));
    wire::<ListTasksOutput>(json!({"tasks": [task_view()], "next_cursor": "c3"}));
    wire::<ListTasksOutput>(json!({"tasks": []}));
    wire::<SendTaskMessageOutput>(json!({
        "task_id": TASK, "status": "running", "event_seq": 4, "delivered": true, "note": "sent"
    }));
    wire::<SendTaskControlOutput>(json!({
        "task_id": TASK, "status": "cancelled", "changed": true, "message": "cancelled"
    }));
    wire::<GetTaskFilesOutput>(json!({
        "task_id": TASK, "truncated": false,
        "entries": [{"path": "src", "kind": "dir"}, {"path": "src/a.rs", "kind": "file", "size": 3}]
    }));
    wire::<ReadTaskFileOutput>(json!({
        "path": "a.rs", "size": 3, "offset": 0, "bytes_read": 3, "content": "abc",
        "binary": false, "has_more": false
    }));
    wire::<ReadTaskFileOutput>(json!({
        "path": "a.bin", "size": 3, "offset": 0, "bytes_read": 3, "binary": true, "has_more": false
    }));
    wire::<ListApprovalsOutput>(json!({"approvals": [approval()]}));
    wire::<RevokeApprovalOutput>(json!({"revoked": approval(), "message": "revoked"}));
    wire::<GetAuditLogOutput>(json!({
        "records": [{
            "seq": 8, "at": 1, "agent_id": "a", "task_id": TASK, "source": "executor",
            "subject": "bash", "outcome": "deny", "stage": "permission", "reason": "rule",
            "detail": {"rule": "bash rm *"}
        }],
        "next_before_seq": 8
    }));
}

#[test]
fn outputs_ignore_fields_added_later() {
    let newer = json!({
        "task_id": TASK, "status": "running", "changed": false, "message": "m", "new": 1
    });
    assert!(serde_json::from_value::<SendTaskControlOutput>(newer).is_ok());
}

#[test]
fn builtin_tools() {
    wire::<PingArgs>(json!({"agent_id": "a", "message": "hi"}));
    wire::<PingArgs>(json!({}));
    wire::<PingOutput>(json!({
        "ok": true, "message": "hi", "agent_id": "a", "server": "handoff", "version": "0.1.0",
        "server_time_ms": 1
    }));
    wire::<HealthArgs>(json!({}));
    wire::<HealthReport>(json!({
        "status": "degraded", "server": "handoff", "version": "0.1.0", "uptime_ms": 1,
        "started_at_ms": 2, "components": [{"name": "store", "ready": false, "detail": "opening"}],
        "tasks": {"active": 1, "queued": 2}
    }));
    wire::<ReadToolOutputArgs>(json!({
        "agent_id": "a", "output_id": "tool_0123456789abcdef0123456789abcdef", "offset": 1,
        "limit": 2, "lines": 3
    }));
    wire::<ReadToolOutputOutput>(json!({
        "output_id": "tool_0123456789abcdef0123456789abcdef", "text": "x", "offset": 0,
        "total_bytes": 1
    }));
}

#[test]
fn task_rules_become_permission_rules() {
    let rule = wire::<TaskRule>(json!({"permission": "webfetch", "action": "ask"}));
    assert_eq!(
        PermissionRule::from(rule),
        PermissionRule::new("webfetch", "*", PermissionAction::Ask)
    );
    let rule = wire::<TaskRule>(json!({"permission": "bash", "pattern": "rm *", "action": "deny"}));
    assert_eq!(
        PermissionRule::from(rule),
        PermissionRule::new("bash", "rm *", PermissionAction::Deny)
    );
}

#[test]
fn error_results_parse() {
    let result = wire::<ToolErrorMeta>(json!({
        "handoff/error": {"code": "QUEUE_FULL", "message": "queue full", "retry_after_ms": 1000}
    }));
    assert!(codes::is_retryable(&result.error.code));
    wire::<ToolErrorMeta>(json!({
        "handoff/error": {"code": "INVALID_ARGUMENTS", "message": "bad", "pointer": "/task_id"}
    }));
    assert_eq!(
        codes::ALL.iter().collect::<HashSet<_>>().len(),
        codes::ALL.len()
    );
}

fn name_of<A: ToolCall>() -> &'static str {
    A::NAME
}

#[test]
fn every_tool_name_has_its_argument_type() {
    let typed = [
        name_of::<ExecuteTaskArgs>(),
        name_of::<GetTaskStatusArgs>(),
        name_of::<GetTaskHistoryArgs>(),
        name_of::<ListTasksArgs>(),
        name_of::<SendTaskMessageArgs>(),
        name_of::<SendTaskControlArgs>(),
        name_of::<GetTaskFilesArgs>(),
        name_of::<ReadTaskFileArgs>(),
        name_of::<ListApprovalsArgs>(),
        name_of::<RevokeApprovalArgs>(),
        name_of::<GetAuditLogArgs>(),
        name_of::<PingArgs>(),
        name_of::<HealthArgs>(),
        name_of::<ReadToolOutputArgs>(),
    ];
    let listed: Vec<&str> = names::TASK_TOOLS
        .into_iter()
        .chain(names::BUILTIN_TOOLS)
        .collect();
    assert_eq!(typed.to_vec(), listed);
    assert!(TaskId::parse(TASK).is_ok());
}
