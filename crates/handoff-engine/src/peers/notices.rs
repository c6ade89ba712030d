//! What happens to tasks, told across instances: this instance's notices (new events, state
//! changes) are copied to the others as store broadcasts, and theirs are published to this
//! instance's in-process subscribers — sync waits, MCP Tasks polling, the elicitation relay —
//! so those follow a task wherever it runs. Integrations (Letta, Matrix) are not told: their
//! writers run on the instance holding the task.

use std::{collections::BTreeSet, sync::Arc};

use handoff_task::{TaskId, TaskStatus};
use tokio::sync::mpsc;

use crate::{outbox::TaskNotice, state::EngineState};

/// Notices waiting to be sent before new ones are dropped (a subscriber elsewhere then learns
/// of the change at its next re-read).
pub(super) const QUEUE: usize = 4096;
/// A broadcast's size at most, below the store's limit.
const CHUNK: usize = 6_000;

/// Sends this instance's notices to the others until the engine stops.
pub(super) async fn forward(state: Arc<EngineState>, mut notices: mpsc::Receiver<TaskNotice>) {
    let mut batch = Vec::new();
    loop {
        let first = tokio::select! {
            () = state.instance.stop.cancelled() => return,
            notice = notices.recv() => notice,
        };
        let Some(first) = first else { return };
        batch.push(first);
        while batch.len() < QUEUE
            && let Ok(more) = notices.try_recv()
        {
            batch.push(more);
        }
        for chunk in encode(&state.instance.id(), &batch) {
            if let Err(e) = state.store.broadcast(&chunk).await {
                tracing::debug!(error = %e, "could not tell the other instances what happened");
            }
        }
        batch.clear();
    }
}

/// Publishes the notices of another instance's broadcast to this instance's subscribers.
pub(super) fn received(state: &EngineState, body: &str) {
    for notice in decode(&state.instance.id(), body) {
        // A task queued or a slot freed elsewhere: this instance's scheduler looks at once.
        if let TaskNotice::Status(_, status) = &notice
            && (*status == TaskStatus::Queued || status.is_terminal())
        {
            state.wake.notify_one();
        }
        state.outbox.relayed(notice);
    }
}

/// Lines of `notices` (duplicates dropped, order of state changes kept), in chunks that fit
/// one broadcast: `e <origin> <task>` and `s <origin> <task> <status>`.
fn encode(origin: &str, notices: &[TaskNotice]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut chunks = vec![String::new()];
    for notice in notices {
        let line = match notice {
            TaskNotice::Events(id) => format!("e {origin} {id}\n"),
            TaskNotice::Status(id, status) => format!("s {origin} {id} {status}\n"),
        };
        if !seen.insert(line.clone()) {
            continue;
        }
        let last = chunks.last_mut().filter(|c| c.len() + line.len() <= CHUNK);
        match last {
            Some(chunk) => chunk.push_str(&line),
            None => chunks.push(line),
        }
    }
    chunks.retain(|c| !c.is_empty());
    chunks
}

/// The notices of another instance's broadcast (this instance's own, and any line that does
/// not read, are skipped).
fn decode(me: &str, body: &str) -> Vec<TaskNotice> {
    body.lines()
        .filter_map(|line| {
            let mut parts = line.split(' ');
            let (kind, origin, id) = (parts.next()?, parts.next()?, parts.next()?);
            if origin == me {
                return None;
            }
            let id = TaskId::parse(id).ok()?;
            match (kind, parts.next()) {
                ("e", None) => Some(TaskNotice::Events(id)),
                ("s", Some(status)) => {
                    Some(TaskNotice::Status(id, status.parse::<TaskStatus>().ok()?))
                }
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_cross_once_and_never_come_back() {
        let a = TaskId::generate().unwrap();
        let b = TaskId::generate().unwrap();
        let notices = [
            TaskNotice::Events(a.clone()),
            TaskNotice::Events(a.clone()),
            TaskNotice::Status(b.clone(), TaskStatus::Running),
            TaskNotice::Status(b.clone(), TaskStatus::Completed),
        ];
        let chunks = encode("host-1-aa", &notices);
        assert_eq!(chunks.len(), 1);
        assert_eq!(
            decode("host-2-bb", &chunks[0]),
            [
                TaskNotice::Events(a),
                TaskNotice::Status(b.clone(), TaskStatus::Running),
                TaskNotice::Status(b, TaskStatus::Completed),
            ]
        );
        assert!(
            decode("host-1-aa", &chunks[0]).is_empty(),
            "its own notices"
        );
        assert!(decode("host-2-bb", "s host-1-aa task_nope running\nx y z\n").is_empty());
    }

    #[test]
    fn many_notices_split_into_broadcasts_that_fit() {
        let notices: Vec<_> = (0..500)
            .map(|_| TaskNotice::Events(TaskId::generate().unwrap()))
            .collect();
        let chunks = encode("host-1-aa", &notices);
        assert!(chunks.len() > 1);
        assert!(chunks.iter().all(|c| c.len() <= CHUNK));
        let back: usize = chunks.iter().map(|c| decode("me", c).len()).sum();
        assert_eq!(back, 500);
    }
}
