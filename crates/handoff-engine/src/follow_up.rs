//! Follow-up rounds: a message to a task that has ended continues it. The same task goes back
//! to the queue (its `round` counted up, its end cleared, its fence counted up) and runs again
//! in the same directory, on the same branch, with a prompt that carries the previous round's
//! answer and changes; the round ends like any run, with its own verdict and commit.
//!
//! Durable: the round number (in the task's options), the status event that opened the round
//! and the follow-up message, written in one transaction, so a dispatcher that claims the task
//! at once finds the message. Nothing lives in memory.

use std::path::Path;

use handoff_store::Reopen;
use handoff_task::{
    EventKind, FileStat, MessageType, NewEvent, Principal, Task, TaskEvent, closing_answer,
    unix_millis_now,
};
use serde_json::{Value, json};

use crate::{Engine, EngineError, MessageReceipt};

/// Most rounds one task may run: a loop of follow-ups must end somewhere.
pub(crate) const MAX_ROUNDS: u32 = 50;
/// Characters of the previous round's answer carried into the next round's prompt.
const ANSWER_CHARS: usize = 8_000;
/// Changed files of the previous round listed in the next round's prompt.
const FILES_LISTED: usize = 50;

impl Engine {
    /// Continues finished `task` with `message` as a new round (see the module doc).
    pub(crate) async fn follow_up(
        &self,
        caller: &Principal,
        task: Task,
        message_type: MessageType,
        message: String,
        metadata: Option<Value>,
    ) -> Result<MessageReceipt, EngineError> {
        let inner = &self.inner;
        let id = &task.id;
        if message_type == MessageType::Approval {
            return Err(EngineError::Conflict(format!(
                "task {id} has ended ({}): there is nothing to approve; send an update or an \
                 instruction to continue it in a follow-up round",
                task.status
            )));
        }
        let round = task.options.round.saturating_add(1);
        if round > MAX_ROUNDS {
            return Err(EngineError::Conflict(format!(
                "task {id} has run {MAX_ROUNDS} rounds, the most one task may; submit a new task"
            )));
        }
        self.work_is_left(&task).await?;
        let agent = caller.name();
        if let Err(wait) = inner.rate.take(&*inner.store, agent.as_str()).await? {
            inner.metrics.refused("rate_limited");
            return Err(EngineError::RateLimited {
                agent: agent.to_string(),
                retry_after: wait,
            });
        }
        let mut options = task.options.clone();
        options.round = round;
        let reopen = Reopen {
            from: task.status,
            at: unix_millis_now(),
            options,
            reason: format!("follow-up round {round} from {agent}"),
            events: vec![NewEvent::new(EventKind::Message, message).with_data(json!({
                "message_type": message_type,
                "from": agent,
                "delivered": false,
                "metadata": metadata,
                "round": round,
            }))],
        };
        let Some(reopened) = inner.store.reopen(id, &reopen).await? else {
            return Err(EngineError::Conflict(format!(
                "task {id} changed while the follow-up was sent; read its status and try again"
            )));
        };
        inner.outbox.events(id);
        inner.outbox.status(id, reopened.status);
        inner.wake.notify_one();
        let seq = inner
            .store
            .recent_events(id, 1)
            .await?
            .last()
            .map_or(0, |e| e.seq);
        let note = format!(
            "task {id} had ended ({}); this message starts follow-up round {round} in the same \
             working directory{}; it is queued",
            task.status,
            if self.on_branch(&reopened) {
                format!(" on branch {}", crate::worktree::branch_for(&reopened))
            } else {
                String::new()
            }
        );
        Ok(MessageReceipt {
            task: reopened,
            seq,
            delivered: false,
            note,
        })
    }

    /// Whether `task`'s directory is a worktree of the configured repository.
    fn on_branch(&self, task: &Task) -> bool {
        self.inner.workdirs.repository_for(&task.options).is_some()
    }

    /// Refuses a follow-up when nothing of the task's work is left to continue.
    async fn work_is_left(&self, task: &Task) -> Result<(), EngineError> {
        let dir = Path::new(&task.workdir);
        if tokio::fs::metadata(dir).await.is_ok_and(|m| m.is_dir()) || self.on_branch(task) {
            return Ok(());
        }
        Err(EngineError::Conflict(format!(
            "task {} cannot continue: its working directory was removed when it ended \
             (tasks.workdir_cleanup = on_completion) and no branch holds its work; submit a \
             new task",
            task.id
        )))
    }
}

/// The prompt of a run: the description, then (in a follow-up round) what the previous
/// round left and the follow-up messages, or (in the first round) the messages sent while it
/// was queued. `events` are the task's events, oldest first; `changed` the stat of the last
/// stored diff.
pub(crate) fn prompt_of(
    task: &Task,
    events: &[TaskEvent],
    branch: Option<&str>,
    changed: &[FileStat],
) -> String {
    let opened = events
        .iter()
        .rposition(|e| e.kind == EventKind::Status && e.data.get("round").is_some());
    let messages: Vec<String> = events[opened.map_or(0, |i| i + 1)..]
        .iter()
        .filter(|e| e.kind == EventKind::Message)
        .map(|e| {
            let kind = e
                .data
                .get("message_type")
                .and_then(Value::as_str)
                .unwrap_or("update");
            format!("- [{kind}] {}", e.message)
        })
        .collect();
    let Some(opened) = opened.filter(|_| task.options.round > 1) else {
        if messages.is_empty() {
            return task.description.clone();
        }
        return format!(
            "{}\n\nMessages received while this task was queued:\n{}",
            task.description,
            messages.join("\n")
        );
    };
    let mut prompt = format!(
        "{}\n\nThis is follow-up round {} of this task. You worked on it before, in this same \
         directory ({}).\n",
        task.description,
        task.options.round,
        match branch {
            Some(branch) => format!("your earlier changes are committed on branch {branch}"),
            None => "your earlier changes are in place".to_owned(),
        }
    );
    if let Some(answer) = closing_answer(&events[..opened]).filter(|a| !a.trim().is_empty()) {
        let answer = handoff_runner::clip(&answer, ANSWER_CHARS);
        prompt.push_str(&format!(
            "\nYour answer at the end of the last round:\n{answer}\n"
        ));
    }
    if !changed.is_empty() {
        let files: Vec<String> = changed
            .iter()
            .take(FILES_LISTED)
            .map(|f| format!("- {} (+{} -{})", f.path, f.added, f.removed))
            .collect();
        prompt.push_str(&format!(
            "\nFiles the last round changed:\n{}\n",
            files.join("\n")
        ));
    }
    let request = if messages.is_empty() {
        "- (none given: check your work and finish it)".to_owned()
    } else {
        messages.join("\n")
    };
    prompt.push_str(&format!("\nThe follow-up request:\n{request}"));
    prompt
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use handoff_task::{AgentId, TaskId, TaskOptions, TaskStatus};

    use super::*;

    fn task(round: u32) -> Task {
        Task {
            id: TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap(),
            agent_id: AgentId::parse("a").unwrap(),
            description: "fix the parser".to_owned(),
            executor: "command".to_owned(),
            options: TaskOptions {
                round,
                ..TaskOptions::default()
            },
            status: TaskStatus::Queued,
            priority: 0,
            queue_seq: 1,
            workdir: "/w".to_owned(),
            created_at: 0,
            started_at: None,
            completed_at: None,
            exit: None,
            error: None,
            idempotency_key: None,
            metadata: Value::Null,
            runner_state: None,
            result_delivered_at: None,
            lease: None,
            fence: 0,
        }
    }

    fn event(seq: i64, kind: EventKind, message: &str, data: Value) -> TaskEvent {
        TaskEvent {
            task_id: TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap(),
            seq,
            at: seq,
            kind,
            message: message.to_owned(),
            data,
        }
    }

    #[test]
    fn the_first_round_takes_the_messages_sent_while_queued() {
        assert_eq!(prompt_of(&task(1), &[], None, &[]), "fix the parser");
        let queued = [event(
            1,
            EventKind::Message,
            "use the new API",
            json!({"message_type": "clarification"}),
        )];
        assert_eq!(
            prompt_of(&task(1), &queued, None, &[]),
            "fix the parser\n\nMessages received while this task was queued:\n\
             - [clarification] use the new API"
        );
    }

    #[test]
    fn a_follow_up_carries_the_last_answer_changes_and_only_its_own_messages() {
        let events = [
            event(1, EventKind::Message, "queued note", json!({})),
            event(2, EventKind::Tool, "edit parser.rs", json!({})),
            event(3, EventKind::Text, "Fixed the parser.", json!({})),
            event(4, EventKind::Message, "live note", json!({})),
            event(
                5,
                EventKind::Status,
                "completed",
                json!({"to": "completed"}),
            ),
            event(
                6,
                EventKind::Status,
                "follow-up round 2 from a",
                json!({"from": "completed", "to": "queued", "round": 2}),
            ),
            event(
                7,
                EventKind::Message,
                "add a test",
                json!({"message_type": "update", "round": 2}),
            ),
        ];
        let changed = [FileStat {
            path: "src/parser.rs".to_owned(),
            added: 3,
            removed: 1,
            binary: false,
        }];
        let prompt = prompt_of(&task(2), &events, Some("handoff/abc-fix"), &changed);
        assert!(prompt.starts_with("fix the parser\n\nThis is follow-up round 2"));
        assert!(
            prompt.contains("committed on branch handoff/abc-fix"),
            "{prompt}"
        );
        assert!(
            prompt.contains("Your answer at the end of the last round:\nFixed the parser."),
            "{prompt}"
        );
        assert!(prompt.contains("- src/parser.rs (+3 -1)"), "{prompt}");
        assert!(
            prompt.ends_with("The follow-up request:\n- [update] add a test"),
            "{prompt}"
        );
        assert!(!prompt.contains("queued note") && !prompt.contains("live note"));
    }
}
