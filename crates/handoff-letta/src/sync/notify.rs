//! The completion notification: exactly one message per task, even across lost answers and
//! restarts. The record says `sending` before every attempt. Once an attempt's outcome is
//! unknown, Handoff waits for the agent's runs since the task ended to finish (an async send
//! stores its message only when its run ends), then looks for the message in the agent's recent
//! history (by its fixed `otid`, or its header line); only if it is not there is it sent again.
//! Every send waits first for the agent's runs under way to end (up to [`IDLE_CAP`]): a message
//! sent during a run starts a second run of the same agent beside it.
//! Unless `letta.notify_sync` is on, a task whose final result reached the agent in its own
//! `execute_task {sync: true}` call gets none: while that call still waits, the message waits
//! too, and once it ended the store says whether the result went back in it.

use std::{sync::Arc, time::Duration};

use handoff_integration::{ResultDelivery, Slot};
use handoff_task::{NotifyState, Task, WorkspaceRecord, unix_millis_now};
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

/// The shortest wait between attempts.
const FLOOR: Duration = Duration::from_secs(2);

/// The longest wait for the agent's runs to end before looking for an earlier attempt: a run
/// that outlives it is the agent's own work, not a stuck notification.
const QUIET_CAP: Duration = Duration::from_secs(120);

/// The longest wait for the agent to be idle before a send: a run Letta never ended (a crash of
/// Letta leaves it `running`) must not hold every notification of the agent for good.
const IDLE_CAP: Duration = Duration::from_secs(600);

/// How often the agent's active runs are listed while waiting for them: soon at first, then
/// less often, so a long wait costs few calls from the shared budget.
const QUIET_POLL: Backoff = Backoff {
    base: Duration::from_millis(500),
    cap: Duration::from_secs(5),
};

/// How far Letta's clock may lag Handoff's for a run to still count as made after the task
/// ended.
const CLOCK_SKEW_MS: i64 = 60_000;

/// Sends the task's notification if one is owed and the task has ended; `slot` wakes the
/// wait for a sync call that still waits for the task.
pub(crate) async fn deliver(
    shared: &Arc<Shared>,
    record: &mut WorkspaceRecord,
    slot: &Slot,
) -> Result<(), Halt> {
    if !record.notify.is_owed() {
        return Ok(());
    }
    let Some(snapshot) = shared
        .source
        .overview(&record.task_id, EVENTS_READ)
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
    // An attempt already made (`sending`) is seen through, whatever the call got.
    if record.notify == NotifyState::Pending
        && !shared.config.notify_sync
        && answered_in_call(shared, record, slot).await?
    {
        return skip_answered(shared, record).await;
    }
    let label = record.block_id.as_ref().map(|_| record.label.as_str());
    let notice = Notice::for_task(&snapshot, label);
    send_until_settled(shared, record, &notice, &snapshot.task).await
}

/// Records that no notification is sent: the call that submitted the task got its result.
async fn skip_answered(shared: &Shared, record: &mut WorkspaceRecord) -> Result<(), Halt> {
    record.notify = NotifyState::Off;
    shared.save(record).await?;
    shared.meter.notification_skipped();
    let message = "Letta: no completion notification: the final result reached the agent \
                   in its execute_task {sync: true} call (letta.notify_sync is off)"
        .to_owned();
    shared.note(&record.task_id, "not_notified", message).await;
    Ok(())
}

/// Sends `notice` until it is delivered (or found delivered by an earlier attempt), refused
/// for good, or owed no longer (retention over); transient failures retry with back-off.
async fn send_until_settled(
    shared: &Shared,
    record: &mut WorkspaceRecord,
    notice: &Notice,
    task: &Task,
) -> Result<(), Halt> {
    let agent = record.agent_id.as_str().to_owned();
    let message = NewMessage {
        role: shared.config.notify_role.as_str().to_owned(),
        content: notice.text.clone(),
        otid: notice.otid.clone(),
    };
    let mut failures = 0u32;
    let ended = task.completed_at.unwrap_or_else(unix_millis_now);
    loop {
        let earlier = match record.notify {
            NotifyState::Sending => landed(shared, &agent, notice, ended).await,
            _ => Ok(false),
        };
        let outcome = match earlier {
            Ok(true) => Ok(None),
            Ok(false) => {
                match idle(shared, record, &agent).await {
                    Ok(()) => {
                        // A retry is already stored as `sending` (the failure was saved with it).
                        if record.notify != NotifyState::Sending {
                            record.notify = NotifyState::Sending;
                            shared.save(record).await?;
                        }
                        send(shared, &agent, &message).await.map(Some)
                    }
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        };
        let error = match outcome {
            Ok(run) => return delivered(shared, record, run.flatten(), ended).await,
            Err(LettaError::Stopped { .. }) => return Err(Halt::Stopping),
            Err(e) => e,
        };
        shared.meter.notification_failed();
        record.last_error = Some(error.to_string());
        if error.is_permanent() {
            record.notify = NotifyState::Failed;
            shared.save(record).await?;
            let message = format!("Letta: notification not delivered: {error}");
            shared.note(&record.task_id, "not_notified", message).await;
            return Ok(());
        }
        failures += 1;
        if shared.retention_over(task.completed_at) {
            record.notify = NotifyState::Failed;
            shared.save(record).await?;
            return Ok(());
        }
        shared.save(record).await?;
        tokio::select! {
            () = tokio::time::sleep(RETRY.wait(failures).max(FLOOR)) => {}
            () = shared.stop.cancelled() => return Err(Halt::Stopping),
        }
    }
}

/// Records a delivered notification (`run`: Letta's run id, when the send returned one).
async fn delivered(
    shared: &Shared,
    record: &mut WorkspaceRecord,
    run: Option<String>,
    ended: i64,
) -> Result<(), Halt> {
    let after_end = unix_millis_now().saturating_sub(ended).max(0);
    shared
        .meter
        .notification_sent(Duration::from_millis(after_end.unsigned_abs()));
    record.notify = NotifyState::Sent;
    record.notify_run_id = run;
    record.last_error = None;
    shared.save(record).await?;
    let message = "Letta: completion notification delivered".to_owned();
    shared.note(&record.task_id, "notified", message).await;
    Ok(())
}

/// Whether the task's final result went back in the call that submitted it; while that call
/// still waits for the task, waits for it to end (its end wakes `slot`).
async fn answered_in_call(
    shared: &Shared,
    record: &WorkspaceRecord,
    slot: &Slot,
) -> Result<bool, Halt> {
    loop {
        match shared.source.result_delivery(&record.task_id).await {
            Ok(ResultDelivery::Delivered) => return Ok(true),
            Ok(ResultDelivery::NotDelivered) => return Ok(false),
            Ok(ResultDelivery::Awaited) => {}
            Err(e) => return Err(Halt::Store(e.to_string())),
        }
        tokio::select! {
            () = slot.woken() => {}
            () = shared.stop.cancelled() => return Err(Halt::Stopping),
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
        Err(e) if e.is_missing_route() => shared
            .client
            .send_message(agent, message)
            .await
            .map(|()| None),
        Err(e) => Err(e),
    }
}

/// Whether an earlier attempt reached the agent: once the agent's runs since the task ended
/// (`ended`, Unix ms) have finished, its recent messages hold the notification.
async fn landed(
    shared: &Shared,
    agent: &str,
    notice: &Notice,
    ended: i64,
) -> Result<bool, LettaError> {
    quiet(
        shared,
        agent,
        ended.saturating_sub(CLOCK_SKEW_MS),
        QUIET_CAP,
    )
    .await?;
    let messages = shared.client.recent_messages(agent, SEARCH_DEPTH).await?;
    Ok(messages
        .iter()
        .any(|m| is_notice(m, &notice.otid, &notice.header)))
}

/// Waits, up to [`IDLE_CAP`], until the agent has no run waiting or under way, and says so on
/// the task when it has to wait.
async fn idle(shared: &Shared, record: &WorkspaceRecord, agent: &str) -> Result<(), LettaError> {
    if quiet(shared, agent, i64::MIN, Duration::ZERO).await? == Quiet::Idle {
        return Ok(());
    }
    let message = "Letta: the agent is in a run; the notification waits for it to end".to_owned();
    shared.note(&record.task_id, "notify_waits", message).await;
    if quiet(shared, agent, i64::MIN, IDLE_CAP).await? == Quiet::StillBusy {
        let message = format!(
            "Letta: the agent was still in a run after {} s; notifying anyway",
            IDLE_CAP.as_secs()
        );
        shared.note(&record.task_id, "notify_waits", message).await;
    }
    Ok(())
}

/// What a wait for the agent's runs found.
#[derive(Debug, PartialEq, Eq)]
enum Quiet {
    /// No run of the kind waited for is waiting or under way (or Letta lists no runs).
    Idle,
    /// One still was when the wait's cap came.
    StillBusy,
}

/// Waits, up to `cap`, until the agent has no run made since `since` (Unix ms) still waiting
/// or under way. A server without the run list is not waited for.
async fn quiet(
    shared: &Shared,
    agent: &str,
    since: i64,
    cap: Duration,
) -> Result<Quiet, LettaError> {
    let give_up = tokio::time::Instant::now() + cap;
    let mut polls = 0u32;
    loop {
        let runs = match shared.client.active_runs(agent).await {
            Ok(runs) => runs,
            Err(e) if e.is_missing_route() => return Ok(Quiet::Idle),
            Err(e) => return Err(e),
        };
        // A run whose time does not parse might be ours: wait for it too.
        let busy = runs
            .iter()
            .any(|r| r.created_at_millis().is_none_or(|at| at >= since));
        if !busy {
            return Ok(Quiet::Idle);
        }
        if tokio::time::Instant::now() >= give_up {
            return Ok(Quiet::StillBusy);
        }
        polls += 1;
        tokio::select! {
            () = tokio::time::sleep(QUIET_POLL.wait(polls)) => {}
            () = shared.stop.cancelled() => return Err(LettaError::Stopped { what: "wait for runs" }),
        }
    }
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
