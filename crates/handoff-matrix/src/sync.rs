//! Reading the rooms: one `/sync` loop from the stored position. Each new message in a task's
//! room is handled once (its id is stored as applied before it is acted on), and the position
//! is stored only after the whole batch was handled, so a restart neither misses nor replays a
//! command. The bot's own messages are skipped by sender.

use std::{sync::Arc, time::Duration};

use handoff_task::{MatrixUserId, TaskId, unix_millis_now};
use serde_json::Value;

use crate::{
    Command, INTEGRATION, RoomEvent, Shared, Steering, command, html, pace::backoff,
    room::send_notice, source,
};

/// The stored position's name.
const SINCE: &str = "since";

/// Runs until the integration stops.
pub(crate) async fn run(shared: Arc<Shared>, steering: Arc<dyn Steering>) {
    let Some((me, filter)) = log_in(&shared).await else {
        return;
    };
    let mut since = loop {
        match shared.store.cursor(INTEGRATION, SINCE).await {
            Ok(since) => break since,
            Err(e) => {
                tracing::warn!(error = %e, "matrix: cannot read the sync position");
                if !shared.pause(Duration::from_secs(1)).await {
                    return;
                }
            }
        }
    };
    let mut attempt = 0;
    loop {
        // The first sync of a fresh bot returns at once; later ones wait for news.
        let wait = if since.is_some() {
            shared.config.sync_timeout
        } else {
            Duration::ZERO
        };
        let synced = tokio::select! {
            r = shared.client.sync(&filter, since.as_deref(), wait) => r,
            () = shared.stop.cancelled() => return,
        };
        let batch = match synced {
            Ok(batch) => batch,
            Err(e) => {
                tracing::debug!(error = %e, "matrix: sync failed; retrying");
                if !shared.pause(backoff(attempt)).await {
                    return;
                }
                attempt += 1;
                continue;
            }
        };
        let handled = handle_batch(&shared, steering.as_ref(), &me, &batch).await;
        let stored = match handled {
            Ok(()) => shared
                .store
                .set_cursor(INTEGRATION, SINCE, &batch.next_batch)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        };
        match stored {
            Ok(()) => {
                attempt = 0;
                since = Some(batch.next_batch);
            }
            Err(e) => {
                // The same batch is read again; what was applied is not applied twice.
                tracing::warn!(error = %e, "matrix: a sync batch is retried");
                if !shared.pause(backoff(attempt)).await {
                    return;
                }
                attempt += 1;
            }
        }
    }
}

/// The bot's user id and its message filter, retried until known.
async fn log_in(shared: &Shared) -> Option<(String, String)> {
    let mut attempt = 0;
    loop {
        let result = async {
            let me = shared.client.whoami().await?;
            let filter = shared.client.message_filter(&me).await?;
            Ok::<_, crate::MatrixError>((me, filter))
        }
        .await;
        match result {
            Ok((me, filter)) => {
                let _ = shared.me.set(me.clone());
                return Some((me, filter));
            }
            Err(e) => {
                tracing::warn!(error = %e, "matrix: cannot log in; retrying");
                if !shared.pause(backoff(attempt)).await {
                    return None;
                }
                attempt += 1;
            }
        }
    }
}

/// Handles every message of a batch in the rooms of tasks.
async fn handle_batch(
    shared: &Shared,
    steering: &dyn Steering,
    me: &str,
    batch: &crate::SyncResponse,
) -> Result<(), String> {
    for (room, joined) in &batch.rooms.join {
        let record = shared
            .store
            .channel_by_id(INTEGRATION, room)
            .await
            .map_err(|e| e.to_string())?;
        let Some(record) = record else { continue };
        for event in &joined.timeline.events {
            handle(shared, steering, me, room, &record.task_id, event).await?;
        }
    }
    Ok(())
}

/// What a message from a room is, before the sender is checked.
enum Incoming<'a> {
    /// Not for the bot (its own, a notice, an edit, not a message).
    Ignored,
    /// A text message.
    Text(&'a str),
}

/// Classifies `event` (the bot's own messages are never routed back).
fn classify<'a>(me: &str, event: &'a RoomEvent) -> Incoming<'a> {
    if event.sender == me || event.kind != "m.room.message" {
        return Incoming::Ignored;
    }
    let content = &event.content;
    let is_edit = content
        .pointer("/m.relates_to/rel_type")
        .and_then(Value::as_str)
        == Some("m.replace");
    let text = content.get("msgtype").and_then(Value::as_str) == Some("m.text");
    match content.get("body").and_then(Value::as_str) {
        Some(body) if text && !is_edit && !body.trim().is_empty() => Incoming::Text(body),
        _ => Incoming::Ignored,
    }
}

/// Handles one message once.
async fn handle(
    shared: &Shared,
    steering: &dyn Steering,
    me: &str,
    room: &str,
    task: &TaskId,
    event: &RoomEvent,
) -> Result<(), String> {
    let Incoming::Text(body) = classify(me, event) else {
        return Ok(());
    };
    let key = format!("{room}/{}", event.event_id);
    let first = shared
        .store
        .mark_applied(INTEGRATION, &key, unix_millis_now())
        .await
        .map_err(|e| e.to_string())?;
    if !first {
        return Ok(());
    }
    let reply = answer(shared, steering, task, &event.sender, body).await;
    let txn = format!("reply-{}", event.event_id);
    send_notice(shared, room, &txn, &html::notice(&[reply], false)).await;
    Ok(())
}

/// What the bot answers `sender`'s `body`, after acting on it if `sender` may steer.
async fn answer(
    shared: &Shared,
    steering: &dyn Steering,
    task: &TaskId,
    sender: &str,
    body: &str,
) -> String {
    let Some(user) = may_steer(shared, task, sender).await else {
        shared.meter.command_handled(false);
        return format!(
            "Sorry {sender}, only this task's controllers and its agent's owner may steer it \
             from here; nothing was sent to the task."
        );
    };
    let command = match command::parse(body) {
        Ok(Command::Help) => return command::HELP.to_owned(),
        Ok(command) => command,
        Err(unknown) => return format!("Not a command: {}", unknown.0),
    };
    let outcome = steering.steer(&user, task, &command).await;
    shared.meter.command_handled(outcome.is_ok());
    match outcome {
        Ok(done) => done,
        Err(refused) => format!("Not done: {refused}"),
    }
}

/// `sender` as a user who may steer `task`: a controller, or the owner of its agent (read from
/// the task, so an unreadable task steers for nobody but controllers).
async fn may_steer(shared: &Shared, task: &TaskId, sender: &str) -> Option<MatrixUserId> {
    let user = MatrixUserId::parse(sender).ok()?;
    if shared.config.may_control(&user) {
        return Some(user);
    }
    let agent = match source::view(shared.source.as_ref(), task, 0).await {
        Ok(Some(view)) => view.task.agent_id,
        _ => return None,
    };
    shared.config.may_steer(&user, &agent).then_some(user)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(sender: &str, content: Value) -> RoomEvent {
        RoomEvent {
            kind: "m.room.message".into(),
            event_id: "$e1".into(),
            sender: sender.into(),
            content,
        }
    }

    #[test]
    fn only_others_text_messages_reach_the_router() {
        let me = "@bot:localhost";
        let text = json!({"msgtype": "m.text", "body": "!cancel"});
        assert!(matches!(
            classify(me, &event("@alice:localhost", text.clone())),
            Incoming::Text("!cancel")
        ));
        assert!(matches!(classify(me, &event(me, text)), Incoming::Ignored));
        let notice = json!({"msgtype": "m.notice", "body": "Task is running"});
        assert!(matches!(
            classify(me, &event("@other-bot:localhost", notice)),
            Incoming::Ignored
        ));
        let edit = json!({"msgtype": "m.text", "body": "* !cancel",
            "m.relates_to": {"rel_type": "m.replace", "event_id": "$e0"}});
        assert!(matches!(
            classify(me, &event("@alice:localhost", edit)),
            Incoming::Ignored
        ));
    }
}
