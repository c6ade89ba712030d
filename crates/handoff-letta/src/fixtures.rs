//! Task snapshots for unit tests.

use handoff_integration::TaskOverview;
use handoff_task::{
    AgentId, Artifact, ArtifactBody, ArtifactKind, EventKind, Task, TaskEvent, TaskId, TaskOptions,
    TaskStatus,
};
use serde_json::json;

/// A task of `status` whose description is `description`, with `n` output events (the last
/// 30 shown) and an output artifact.
pub(crate) fn snapshot(status: TaskStatus, description: &str, n: u64) -> TaskOverview {
    let id = TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap();
    let shown = n.min(30);
    let recent_events = (n - shown + 1..=n)
        .map(|seq| TaskEvent {
            task_id: id.clone(),
            seq: seq as i64,
            at: 1_700_000_000_000 + seq as i64,
            kind: EventKind::Output,
            message: format!("line {seq}: {}", "x".repeat(150)),
            data: json!({}),
        })
        .collect();
    let terminal = status.is_terminal();
    TaskOverview {
        task: Task {
            id: id.clone(),
            agent_id: AgentId::parse("agent-597b5756-2915-4560-ba6b-91005f085166").unwrap(),
            description: description.to_owned(),
            executor: "command".into(),
            options: TaskOptions::default(),
            status,
            priority: 0,
            queue_seq: 1,
            workdir: "/tmp/w".into(),
            created_at: 1_700_000_000_000,
            started_at: Some(1_700_000_001_000),
            completed_at: terminal.then_some(1_700_000_013_400),
            exit: None,
            error: (status == TaskStatus::Failed).then(|| "exit code 1".to_owned()),
            idempotency_key: None,
            metadata: json!({}),
            runner_state: None,
            result_delivered_at: None,
            lease: None,
            fence: 0,
        },
        recent_events,
        total_events: n,
        artifacts: vec![Artifact {
            task_id: id,
            kind: ArtifactKind::Output,
            size: 5_000_000,
            capped: false,
            body: ArtifactBody::Inline(Vec::new()),
            created_at: 1_700_000_013_400,
        }],
        pending_input: Vec::new(),
        completion: None,
        model_usage: None,
        at: 1_700_000_013_500,
    }
}
