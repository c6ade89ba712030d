//! Finding or creating a task's room, so that a crash never leaves two rooms for one task or a
//! room nobody closes. The room is created under an alias derived from the task
//! (`#handoff-<task>:<server>`), and that alias is recorded before the room is created: a
//! process that dies between creating the room and recording its id leaves the alias behind,
//! and the next one resolves it (or gets `M_ROOM_IN_USE` when creating) and adopts the room.
//! What the room looks like (`room_spec`) and how its record is stored (`store_channel`)
//! live here too: the poster (`room`) sits above this module and uses both.

use handoff_store::ChannelRecord;
use handoff_task::{MatrixUserId, Task, TaskId, faults, unix_millis_now};
use serde_json::{Value, json};

use crate::{INTEGRATION, MatrixError, RoomOrigin, RoomSpec, Shared, pace::backoff, render};

/// Crash-injection point: the alias is recorded, the room not created yet.
pub const AFTER_ALIAS_RECORDED: &str = "matrix_after_alias_recorded";
/// Crash-injection point: the room exists on the homeserver, its id is not recorded yet.
pub const AFTER_ROOM_CREATED: &str = "matrix_after_room_created";

/// The local part of the alias of `task`'s room.
pub(crate) fn alias_name(task: &TaskId) -> String {
    format!("handoff-{task}")
}

/// The full alias of `task`'s room, on the bot's own server.
pub(crate) fn alias(task: &TaskId, me: &str) -> Option<String> {
    let (_, server) = me.split_once(':')?;
    Some(format!("#{}:{server}", alias_name(task)))
}

/// Whether a recorded channel id is a room id (`!…`) rather than the alias recorded before
/// the room was created.
pub(crate) fn is_room_id(channel: &str) -> bool {
    channel.starts_with('!')
}

/// The task's room and whether this call made it known (its opening message is still to be
/// posted): the recorded one, an interrupted creation's, or a new one. `None` when the
/// integration stops or the homeserver refuses (noted in the task's history).
pub(crate) async fn ensure_room(shared: &Shared, task: &Task) -> Option<(String, bool)> {
    let recorded = recorded(shared, &task.id).await?;
    if let Some(record) = &recorded
        && is_room_id(&record.channel_id)
    {
        return Some((record.channel_id.clone(), false));
    }
    let me = bot_user(shared, task).await?;
    let Some(alias) = alias(&task.id, &me) else {
        let message = format!("the bot's user id {me} names no server");
        shared.note(&task.id, "room_failed", message).await;
        return None;
    };
    // Only a recorded alias can belong to a room an earlier process created.
    let adopt_first = recorded.is_some();
    if !adopt_first {
        store_channel(shared, &record(task, &alias)).await?;
        faults::abort_at(AFTER_ALIAS_RECORDED);
    }
    let spec = room_spec(shared, task);
    let (room, origin) = create_or_adopt(shared, task, &spec, &alias, adopt_first).await?;
    store_channel(shared, &record(task, &room)).await?;
    shared.meter.room_opened(origin);
    let invited = spec.invite.len();
    let message = format!("Matrix room {room} created, {invited} invited");
    shared.note(&task.id, "room_created", message).await;
    Some((room, true))
}

/// A fresh record of `task`'s room (or of its alias, before the room exists).
fn record(task: &Task, channel: &str) -> ChannelRecord {
    ChannelRecord {
        integration: INTEGRATION.to_owned(),
        task_id: task.id.clone(),
        channel_id: channel.to_owned(),
        created_at: unix_millis_now(),
        close_at: None,
        closed_at: None,
    }
}

/// The stored record of the task's room, retried until read.
async fn recorded(shared: &Shared, id: &TaskId) -> Option<Option<ChannelRecord>> {
    let mut attempt = 0;
    loop {
        match shared.store.channel(INTEGRATION, id).await {
            Ok(record) => return Some(record),
            Err(e) => {
                tracing::warn!(task = %id, error = %e, "matrix: cannot read the room record");
                if !shared.pause(backoff(attempt)).await {
                    return None;
                }
                attempt += 1;
            }
        }
    }
}

/// The bot's user id (its server names the alias), asked once and kept.
pub(crate) async fn bot_user(shared: &Shared, task: &Task) -> Option<String> {
    let mut attempt = 0;
    loop {
        if let Some(me) = shared.me.get() {
            return Some(me.clone());
        }
        match shared.client.whoami().await {
            Ok(me) => {
                let _ = shared.me.set(me);
            }
            Err(e) if e.retryable() => {
                tracing::warn!(task = %task.id, attempt, error = %e, "matrix: cannot ask the homeserver who the bot is; retrying");
                if !shared.pause(backoff(attempt)).await {
                    return None;
                }
                attempt += 1;
            }
            Err(e) => {
                let message = format!("the task's Matrix room could not be created: {e}");
                shared.note(&task.id, "room_failed", message).await;
                return None;
            }
        }
    }
}

/// The room under `alias`: found (an interrupted creation's) or created.
async fn create_or_adopt(
    shared: &Shared,
    task: &Task,
    spec: &RoomSpec,
    alias: &str,
    mut adopt: bool,
) -> Option<(String, RoomOrigin)> {
    let mut spec = spec.clone();
    let mut attempt = 0;
    loop {
        let outcome = if adopt {
            shared.client.resolve_alias(alias).await
        } else {
            let created = shared.client.create_room(&spec).await.map(Some);
            if created.is_ok() {
                faults::abort_at(AFTER_ROOM_CREATED);
            }
            created
        };
        match outcome {
            Ok(Some(room)) if adopt => match ours(shared, &room).await {
                Some(true) => return Some((room, RoomOrigin::Adopted)),
                // Anyone on the homeserver may create an alias: a room the bot is not in was
                // not made by an earlier Handoff, and the task's news must not go there.
                Some(false) => {
                    tracing::warn!(task = %task.id, %alias, "matrix: the task's alias names a room the bot is not in; creating the room without an alias");
                    spec.alias_name.clear();
                    adopt = false;
                }
                None => {}
            },
            Ok(Some(room)) => return Some((room, RoomOrigin::Created)),
            // The alias is free after all: create the room.
            Ok(None) => adopt = false,
            // Someone (an earlier process) holds the alias: take its room.
            Err(MatrixError::Status { errcode, .. }) if errcode == "M_ROOM_IN_USE" => adopt = true,
            Err(e) if e.retryable() => {
                tracing::warn!(task = %task.id, attempt, error = %e, "matrix: the homeserver did not create the room; retrying");
            }
            // A homeserver may refuse aliases to the bot: a room without one still serves;
            // only the adoption after a crash is lost.
            Err(e) if !spec.alias_name.is_empty() => {
                tracing::warn!(task = %task.id, error = %e, "matrix: creating the room under its alias failed; creating it without one");
                spec.alias_name.clear();
                adopt = false;
            }
            Err(e) => {
                shared.meter.room_failed();
                let message = format!("the task's Matrix room could not be created: {e}");
                shared.note(&task.id, "room_failed", message).await;
                return None;
            }
        }
        // Alternating create and resolve cannot spin: every turn after the first waits.
        if attempt > 0 && !shared.pause(backoff(attempt)).await {
            return None;
        }
        attempt += 1;
    }
}

/// Whether the bot is joined to `room` (the bot joins only rooms it created); `None` when the
/// homeserver cannot say now.
async fn ours(shared: &Shared, room: &str) -> Option<bool> {
    let me = shared.me.get()?;
    shared.client.is_joined(room, me).await.ok()
}

/// Stores `record`, retrying (`None` when the integration stops).
pub(crate) async fn store_channel(shared: &Shared, record: &ChannelRecord) -> Option<()> {
    let mut attempt = 0;
    loop {
        match shared.store.put_channel(record).await {
            Ok(()) => return Some(()),
            Err(e) => {
                tracing::warn!(task = %record.task_id, error = %e, "matrix: cannot store the room");
                if !shared.pause(backoff(attempt)).await {
                    return None;
                }
                attempt += 1;
            }
        }
    }
}

/// The room of `task`: private, v12, observers and the agent's owners invited, observers at
/// power 0 (read only unless `observers_may_talk`), controllers and owners at 50 (may write),
/// the bot — its creator — not listed (room v12 gives creators unlimited power and refuses
/// them in `users`).
pub(crate) fn room_spec(shared: &Shared, task: &Task) -> RoomSpec {
    let config = &shared.config;
    let me = shared.me.get().map(String::as_str);
    let mut invite: Vec<&MatrixUserId> = Vec::new();
    for user in task
        .options
        .matrix_observers
        .iter()
        .chain(&config.default_observers)
        .chain(config.owners_of(&task.agent_id))
    {
        if Some(user.as_str()) != me && !invite.contains(&user) {
            invite.push(user);
        }
    }
    let users: serde_json::Map<String, Value> = invite
        .iter()
        .map(|u| {
            let level = if config.may_steer(u, &task.agent_id) {
                50
            } else {
                0
            };
            (u.as_str().to_owned(), json!(level))
        })
        .collect();
    let events_default = if config.observers_may_talk { 0 } else { 50 };
    let power_levels = json!({
        "users": users,
        "users_default": 0,
        "events_default": events_default,
        "state_default": 100,
        "invite": 100,
        "kick": 100,
        "ban": 100,
        "redact": 100,
        "notifications": {"room": 100},
        "events": {
            "m.room.name": 100,
            "m.room.topic": 100,
            "m.room.avatar": 100,
            "m.room.power_levels": 100,
            "m.room.history_visibility": 100,
            "m.room.canonical_alias": 100,
            "m.room.encryption": 100,
            "m.room.server_acl": 100,
            "m.room.tombstone": 100,
        },
    });
    RoomSpec {
        name: render::room_name(task),
        topic: render::room_topic(task),
        invite: invite.iter().map(|u| u.as_str().to_owned()).collect(),
        power_levels,
        initial_state: vec![(
            TASK_STATE.to_owned(),
            json!({"task_id": task.id.as_str(), "agent_id": task.agent_id.as_str()}),
        )],
        alias_name: alias_name(&task.id),
    }
}

/// The state event naming the room's task (Handoff's namespace).
pub const TASK_STATE: &str = "dev.handoff.task";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alias_is_the_tasks_on_the_bots_server() {
        let task = TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap();
        assert_eq!(
            alias(&task, "@handoff:matrix.example.org:8448").as_deref(),
            Some("#handoff-task_abcdefghijklmnopqrstuvwxyz:matrix.example.org:8448")
        );
        assert_eq!(alias(&task, "no-server"), None);
        assert!(is_room_id("!abc:example.org"));
        assert!(!is_room_id(
            "#handoff-task_abcdefghijklmnopqrstuvwxyz:example.org"
        ));
    }
}
