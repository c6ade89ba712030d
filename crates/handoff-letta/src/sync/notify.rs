//! The completion notification: exactly one message per task, even across lost answers and
//! restarts. Before every send Handoff looks for the message in the agent's recent history (by
//! its fixed `otid`, or its header line), so an attempt that reached Letta without Handoff
//! hearing back is never repeated; the outcome is stored before anything else happens.

use std::{sync::Arc, time::Duration};

use handoff_task::{NotifyState, WorkspaceRecord, unix_millis_now};
use serde_json::Value;

use super::{EVENTS_READ, Shared, writer::Halt};
use crate::{LettaError, NewMessage, Notice, client::Backoff};

/// Messages searched for an earlier delivery.
const SEARCH_DEPTH: u32 = 100;

/// Retries of a failed send, up to a minute apart.
const RETRY: Backoff = Backoff {
    base: Duration::from_secs(4),
    cap: Duration::from_secs(60),
};

/// The shortest wait before looking again: time for a background run to store the message an
/// unanswered attempt carried, so the search before the next send sees it.
const SETTLE: Duration = Duration::from_secs(2);

/// Sends the task's notification if one is owed and the task has ended.
pub(crate) async fn deliver(
    shared: &Arc<Shared>,
    record: &mut WorkspaceRecord,
) -> Result<(), Halt> {
    if record.notify != NotifyState::Pending {
        return Ok(());
    }
    let Some(snapshot) = shared
        .source
        .snapshot(&record.task_id, EVENTS_READ)
        .await
        .map_err(|e| Halt::Store(e.to_string()))?
    else {
        record.notify = NotifyState::Failed;
        record.last_error = Some("the task was purged before its notification".to_owned());
        return Ok(shared.save(record).await?);
    };
    if !snapshot.task.status.is_terminal() {
        return Ok(());
    }
    let label = record.block_id.as_ref().map(|_| record.label.as_str());
    let notice = Notice::for_task(&snapshot, label);
    let header = format!("[Handoff] Task {} ", record.task_id);
    let agent = record.agent_id.as_str().to_owned();
    let message = NewMessage {
        role: shared.config.notify_role.as_str().to_owned(),
        content: notice.text.clone(),
        otid: notice.otid.clone(),
    };
    let mut failures = 0u32;
    loop {
        let outcome = match delivered(shared, &agent, &notice.otid, &header).await {
            Ok(true) => Ok(None),
            Ok(false) => send(shared, &agent, &message).await.map(Some),
            Err(e) => Err(e),
        };
        match outcome {
            Ok(run) => {
                record.notify = NotifyState::Sent;
                record.notify_run_id = run.flatten();
                record.last_error = None;
                shared.save(record).await?;
                let message = "Letta: completion notification delivered".to_owned();
                shared.note(&record.task_id, "notified", message).await;
                return Ok(());
            }
            Err(LettaError::Stopped { .. }) => return Err(Halt::Stopping),
            Err(e) if e.is_permanent() => {
                record.notify = NotifyState::Failed;
                record.last_error = Some(e.to_string());
                shared.save(record).await?;
                let message = format!("Letta: notification not delivered: {e}");
                shared.note(&record.task_id, "not_notified", message).await;
                return Ok(());
            }
            Err(e) => {
                failures += 1;
                record.last_error = Some(e.to_string());
                if shared
                    .gives_up_at(snapshot.task.completed_at)
                    .is_some_and(|end| unix_millis_now() > end)
                {
                    record.notify = NotifyState::Failed;
                    shared.save(record).await?;
                    return Ok(());
                }
                shared.save(record).await?;
                tokio::select! {
                    () = tokio::time::sleep(RETRY.wait(failures).max(SETTLE)) => {}
                    () = shared.stop.cancelled() => return Err(Halt::Stopping),
                }
            }
        }
    }
}

/// Sends through the async endpoint (a background run; its id is returned), or the
/// synchronous one on a server without it.
async fn send(
    shared: &Shared,
    agent: &str,
    message: &NewMessage,
) -> Result<Option<String>, LettaError> {
    match shared.client.send_message_async(agent, message).await {
        Ok(run) => Ok(Some(run.id)),
        // A route the server lacks says just "Not Found"; an unknown agent names the agent.
        Err(LettaError::NotFound { detail, .. }) if detail == "Not Found" => shared
            .client
            .send_message(agent, message)
            .await
            .map(|()| None),
        Err(e) => Err(e),
    }
}

/// Whether the agent's recent messages already hold this notification.
async fn delivered(
    shared: &Shared,
    agent: &str,
    otid: &str,
    header: &str,
) -> Result<bool, LettaError> {
    let messages = shared.client.recent_messages(agent, SEARCH_DEPTH).await?;
    Ok(messages.iter().any(|m| is_notice(m, otid, header)))
}

/// A stored message is the notification if it kept our otid or carries our header line.
fn is_notice(message: &Value, otid: &str, header: &str) -> bool {
    if message.get("otid").and_then(Value::as_str) == Some(otid) {
        return true;
    }
    let content = match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    content.contains(header)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn notices_are_recognised_by_otid_or_header() {
        let header = "[Handoff] Task task_x ";
        assert!(is_notice(&json!({"otid": "k"}), "k", header));
        assert!(is_notice(
            &json!({"otid": "other", "content": "[Handoff] Task task_x completed."}),
            "k",
            header
        ));
        assert!(is_notice(
            &json!({"content": [{"type": "text", "text": "[Handoff] Task task_x failed."}]}),
            "k",
            header
        ));
        assert!(!is_notice(
            &json!({"content": "[Handoff] Task task_y done"}),
            "k",
            header
        ));
        assert!(!is_notice(
            &json!({"message_type": "assistant_message"}),
            "k",
            header
        ));
    }
}
