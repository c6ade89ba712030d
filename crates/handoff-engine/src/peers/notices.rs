//! What happens to tasks, told across instances: this instance's notices (new events, state
//! changes) are copied to the others as store broadcasts, and theirs are published to this
//! instance's in-process subscribers — sync waits, MCP Tasks polling, the elicitation relay —
//! so those follow a task wherever it runs. Integrations (Letta, Matrix) are not told: their
//! writers run on the instance holding the task. A broadcast carries the protocol's
//! [`TaskNotice`] as JSON, the same value the subscribers on either side read.

use std::{collections::HashSet, sync::Arc};

use handoff_protocol::TaskNotice;
use handoff_task::TaskStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::state::EngineState;

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

/// One broadcast: notices of the instance `from` (its own never come back to it).
#[derive(Serialize, Deserialize)]
struct Broadcast<S, N> {
    from: S,
    notices: Vec<N>,
}

/// `notices` as broadcasts that each fit the store's limit (duplicates dropped, order of
/// state changes kept).
fn encode(origin: &str, notices: &[TaskNotice]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut chunks: Vec<Vec<&TaskNotice>> = vec![Vec::new()];
    // The envelope around the notices: the origin quoted, the field names, the brackets.
    let envelope = origin.len() + 32;
    let mut size = envelope;
    for notice in notices.iter().filter(|n| seen.insert(*n)) {
        let len = serde_json::to_string(notice).map_or(0, |t| t.len()) + 1;
        if size + len > CHUNK {
            chunks.push(Vec::new());
            size = envelope;
        }
        size += len;
        if let Some(chunk) = chunks.last_mut() {
            chunk.push(notice);
        }
    }
    chunks
        .into_iter()
        .filter(|c| !c.is_empty())
        .filter_map(|notices| {
            serde_json::to_string(&Broadcast {
                from: origin,
                notices,
            })
            .ok()
        })
        .collect()
}

/// The notices of another instance's broadcast (this instance's own, and any notice that
/// does not read, are skipped).
fn decode(me: &str, body: &str) -> Vec<TaskNotice> {
    let Ok(broadcast) = serde_json::from_str::<Broadcast<String, Value>>(body) else {
        return Vec::new();
    };
    if broadcast.from == me {
        return Vec::new();
    }
    broadcast
        .notices
        .into_iter()
        .filter_map(|n| serde_json::from_value(n).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use handoff_task::TaskId;

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
        let c = TaskId::generate().unwrap();
        let mixed = format!(
            r#"{{"from":"host-1-aa","notices":[{{"events":"task_nope"}},{{"gone":1}},{{"events":"{c}"}}]}}"#
        );
        assert_eq!(decode("host-2-bb", &mixed), [TaskNotice::Events(c)]);
    }

    #[test]
    fn many_notices_split_into_broadcasts_that_fit() {
        let notices: Vec<_> = (0..500)
            .map(|i| {
                let id = TaskId::generate().unwrap();
                if i % 2 == 0 {
                    TaskNotice::Events(id)
                } else {
                    TaskNotice::Status(id, TaskStatus::InputRequired)
                }
            })
            .collect();
        let chunks = encode("host-1-aa", &notices);
        assert!(chunks.len() > 1);
        assert!(chunks.iter().all(|c| c.len() <= CHUNK));
        let back: usize = chunks.iter().map(|c| decode("me", c).len()).sum();
        assert_eq!(back, 500);
    }
}
