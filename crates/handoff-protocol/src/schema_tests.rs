//! The schemas these types generate are the ones `handoff-tools` publishes: compared with its
//! golden snapshots, so a client validating or rendering forms from this crate sees exactly
//! what `tools/list` shows.

use std::path::Path;

use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde_json::{Value, json};

use crate::{ToolCall, builtin::*, object_schema_for, tasks::*};

/// The input and output schemas of the tool `A` calls.
fn schemas<A>() -> Value
where
    A: ToolCall + JsonSchema,
    A::Output: JsonSchema,
{
    json!({
        "input": object_schema_for::<A>().unwrap(),
        "output": object_schema_for::<A::Output>().unwrap(),
    })
}

/// The JSON body of one of `handoff-tools`' insta snapshots.
fn published(dir: &str, module: &str, tool: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../handoff-tools/src")
        .join(dir)
        .join(format!(
            "snapshots/handoff_tools__{module}__tests__{tool}_schema.snap"
        ));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    // An insta file is a `---`-fenced header, then the snapshot.
    let body = text.splitn(3, "---\n").nth(2).unwrap();
    serde_json::from_str(body).unwrap()
}

fn task_tool<A>() -> (Value, Value)
where
    A: ToolCall + JsonSchema,
    A::Output: JsonSchema,
{
    (schemas::<A>(), published("tasks", "tasks", A::NAME))
}

fn builtin_tool<A>() -> (Value, Value)
where
    A: ToolCall + JsonSchema,
    A::Output: JsonSchema,
{
    (schemas::<A>(), published("builtin", "builtin", A::NAME))
}

#[test]
fn execute_task_schema_is_the_published_one() {
    let (ours, theirs) = task_tool::<ExecuteTaskArgs>();
    assert_eq!(ours, theirs);
    assert_eq!(ours["input"]["required"], json!(["task_description"]));
}

#[test]
fn every_tool_schema_is_the_published_one() {
    for (ours, theirs) in [
        task_tool::<ExecuteTaskArgs>(),
        task_tool::<GetTaskStatusArgs>(),
        task_tool::<GetTaskHistoryArgs>(),
        task_tool::<ListTasksArgs>(),
        task_tool::<SendTaskMessageArgs>(),
        task_tool::<SendTaskControlArgs>(),
        task_tool::<GetTaskFilesArgs>(),
        task_tool::<ReadTaskFileArgs>(),
        task_tool::<ListApprovalsArgs>(),
        task_tool::<RevokeApprovalArgs>(),
        task_tool::<GetAuditLogArgs>(),
        builtin_tool::<PingArgs>(),
        builtin_tool::<HealthArgs>(),
        builtin_tool::<ReadToolOutputArgs>(),
    ] {
        assert_eq!(ours, theirs);
    }
}
