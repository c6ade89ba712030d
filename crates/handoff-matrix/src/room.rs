//! One poster per task with a room: it creates the room (or finds it after a restart), posts
//! status changes at once and other events coalesced, each pending request once, and the
//! outcome; then it schedules the room's closing, which the sweeper carries out.

use std::{collections::HashSet, sync::Arc, time::Duration};

use handoff_integration::{Slot, SourceError};
use handoff_store::ChannelRecord;
use handoff_task::{TaskId, unix_millis_now};
use serde_json::Value;
use tokio::{sync::mpsc, time::Instant};

use crate::{
    INTEGRATION, Shared, TaskView, create, html,
    pace::{Next, Pacer, backoff},
    render, source,
};

/// Events read per look at the task.
const EVENTS_READ: u32 = 40;

/// What one poster remembers between messages.
struct Poster {
    room: String,
    /// The last event seq shown.
    seq: i64,
    /// Requests already posted.
    requests: HashSet<String>,
    last_status: Option<handoff_task::TaskStatus>,
    pacer: Pacer,
}

/// Whether the poster goes on.
enum Step {
    Continue,
    Done,
}

/// Runs `id`'s poster until its outcome is posted or the integration stops.
pub(crate) async fn run(shared: &Arc<Shared>, id: &TaskId, slot: &Slot) {
    let Some(view) = look(shared, id).await else {
        return;
    };
    // Run again for a change of a round whose outcome is already in the room: nothing to say.
    if view.task.status.is_terminal() && shared.has_posted(id, view.task.options.round) {
        return;
    }
    let Some((room, created)) = create::ensure_room(shared, &view.task).await else {
        return;
    };
    if !created && !view.task.status.is_terminal() && !keep_open(shared, id).await {
        return;
    }
    let mut poster = Poster {
        room,
        seq: 0,
        requests: HashSet::new(),
        last_status: None,
        pacer: Pacer::new(shared.config.event_interval),
    };
    if created {
        let may_steer = !shared.config.controllers.is_empty();
        let lines = render::started(&view.task, may_steer);
        if !post(shared, id, &mut poster, &lines).await {
            return;
        }
    }
    poster.pacer.mark(true);
    loop {
        if slot.take_status() {
            poster.pacer.mark(true);
        }
        if slot.take_events() {
            poster.pacer.mark(false);
        }
        match poster.pacer.next(Instant::now()) {
            Next::Post => match update(shared, id, &mut poster).await {
                Some(Step::Continue) => {}
                Some(Step::Done) | None => return,
            },
            Next::WaitUntil(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = slot.woken() => {}
                    () = shared.stop.cancelled() => return,
                }
            }
            Next::Idle => {
                tokio::select! {
                    () = slot.woken() => {}
                    () = shared.stop.cancelled() => return,
                }
            }
        }
    }
}

/// The task now, retried until read (`None`: it is gone, or the integration stops).
async fn look(shared: &Shared, id: &TaskId) -> Option<TaskView> {
    let mut attempt = 0;
    loop {
        match source::view(shared.source.as_ref(), id, EVENTS_READ).await {
            Ok(view) => return view,
            Err(e) => {
                tracing::warn!(task = %id, error = %e, "matrix: cannot read the task");
                if !shared.pause(backoff(attempt)).await {
                    return None;
                }
                attempt += 1;
            }
        }
    }
}

/// Posts what changed; `None` when the integration stops.
async fn update(shared: &Shared, id: &TaskId, poster: &mut Poster) -> Option<Step> {
    let view = look(shared, id).await?;
    let task = &view.task;
    if poster.last_status != Some(task.status) {
        if task.status.is_terminal() {
            if shared.outcome_posted(id, task.options.round) {
                return Some(Step::Done);
            }
            if !post(shared, id, poster, &render::outcome(&view)).await {
                return None;
            }
            schedule_close(shared, id, &poster.room).await;
            return Some(Step::Done);
        }
        if !post(shared, id, poster, &render::status(task)).await {
            return None;
        }
        poster.last_status = Some(task.status);
    }
    for request in &view.pending {
        if poster.requests.insert(request.id.clone())
            && !post(shared, id, poster, &render::pending(task, request)).await
        {
            return None;
        }
    }
    if let Some(lines) = render::progress(task, &view.recent_events, poster.seq)
        && !post(shared, id, poster, &lines).await
    {
        return None;
    }
    if let Some(last) = view.recent_events.last() {
        poster.seq = poster.seq.max(last.seq);
    }
    poster.pacer.posted(Instant::now());
    Some(Step::Continue)
}

/// Sends one message, retrying with back-off while the homeserver is unreachable (the same
/// transaction id each time, so it is posted once). `false` when the integration stops.
async fn post(shared: &Shared, id: &TaskId, poster: &mut Poster, lines: &[String]) -> bool {
    let txn = shared.next_txn(id);
    send_notice(shared, &poster.room, &txn, &html::notice(lines, true)).await
}

/// Sends `content` to `room` under `txn`, retrying while that may help. `false` when the
/// integration stops.
pub(crate) async fn send_notice(shared: &Shared, room: &str, txn: &str, content: &Value) -> bool {
    let mut attempt = 0;
    loop {
        let sent = shared.client.send(room, txn, content).await;
        if sent.is_ok() {
            shared.meter.message_posted();
        } else {
            shared.meter.message_failed();
        }
        match sent {
            Ok(_) => return true,
            Err(e) if e.retryable() => {
                tracing::debug!(room, error = %e, "matrix: send failed; retrying");
                if !shared.pause(backoff(attempt)).await {
                    return false;
                }
                attempt += 1;
            }
            Err(e) => {
                tracing::warn!(room, error = %e, "matrix: message refused; dropped");
                return true;
            }
        }
    }
}

/// Stores when the room of a finished task is to be closed.
async fn schedule_close(shared: &Shared, id: &TaskId, room: &str) {
    let close_at = unix_millis_now().saturating_add(millis(shared.config.archive_after));
    let record = match shared.store.channel(INTEGRATION, id).await {
        Ok(Some(mut record)) => {
            record.close_at = Some(close_at);
            record
        }
        Ok(None) | Err(_) => ChannelRecord {
            integration: INTEGRATION.to_owned(),
            task_id: id.clone(),
            channel_id: room.to_owned(),
            created_at: unix_millis_now(),
            close_at: Some(close_at),
            closed_at: None,
        },
    };
    let _ = create::store_channel(shared, &record).await;
}

/// A task that runs again (a follow-up round) in a room whose closing was scheduled keeps it
/// open; `false` when the room was closed already (the round is said on the task instead).
async fn keep_open(shared: &Shared, id: &TaskId) -> bool {
    let mut record = match shared.store.channel(INTEGRATION, id).await {
        Ok(Some(record)) => record,
        Ok(None) | Err(_) => return true,
    };
    if record.closed_at.is_some() {
        let message = format!(
            "Matrix: the task's room {} was closed after its last round; this round is not \
             posted there",
            record.channel_id
        );
        shared.note(id, "room_closed_before_round", message).await;
        return false;
    }
    if record.close_at.take().is_some() {
        let _ = create::store_channel(shared, &record).await;
    }
    true
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Whether this instance posts about (and closes the room of) `task`; on doubt, not: another
/// instance, or a later pass, will.
async fn posts_here(shared: &Shared, task: &TaskId) -> bool {
    here_or_not(task, shared.source.writes_here(task).await)
}

/// The source's answer to "does this instance post about `task`?"; on doubt, not.
fn here_or_not(task: &TaskId, answer: Result<bool, SourceError>) -> bool {
    answer.unwrap_or_else(|e| {
        tracing::debug!(task = %task, error = %e, "matrix: cannot tell who posts");
        false
    })
}

/// Starts posting for an open room no poster of this process serves, when its task moved here.
async fn adopt(shared: &Arc<Shared>, task: &TaskId) {
    if moved_here(shared, task).await {
        post_here(shared, task);
    }
}

/// Whether `task`'s posting moved to this instance: no poster of it runs here, and the task
/// was taken over by this instance (never on a store of one instance, which says so without
/// I/O).
async fn moved_here(shared: &Shared, task: &TaskId) -> bool {
    if shared.has_poster(task) {
        return false;
    }
    here_or_not(task, shared.source.adopts(task).await)
}

/// Starts posting to `task`'s room from this instance.
fn post_here(shared: &Arc<Shared>, task: &TaskId) {
    tracing::info!(task = %task, "matrix: this instance posts to the task's room now");
    shared.ensure_poster(task);
}

/// Resumes the posters of rooms an earlier process left open, then leaves and forgets rooms
/// whose closing time has come, until the integration stops. Between passes it adopts at once
/// the open room of a task whose state changed here without a poster (`moves`).
pub(crate) async fn sweep(shared: Arc<Shared>, mut moves: mpsc::Receiver<TaskId>) {
    match shared.store.open_channels(INTEGRATION).await {
        Ok(open) => {
            for record in open.iter().filter(|r| r.close_at.is_none()) {
                if posts_here(&shared, &record.task_id).await {
                    shared.ensure_poster(&record.task_id);
                }
            }
        }
        Err(e) => tracing::warn!(error = %e, "matrix: cannot list open rooms"),
    }
    loop {
        let now = unix_millis_now();
        let mut next = now.saturating_add(30_000);
        match shared.store.open_channels(INTEGRATION).await {
            Ok(open) => {
                for mut record in open {
                    let Some(at) = record.close_at else {
                        adopt(&shared, &record.task_id).await;
                        continue;
                    };
                    if at > now {
                        next = next.min(at);
                        continue;
                    }
                    if !posts_here(&shared, &record.task_id).await
                        || !release_alias(&shared, &record.task_id).await
                    {
                        continue;
                    }
                    match shared
                        .client
                        .leave_and_forget(&record.channel_id, "the task ended")
                        .await
                    {
                        Err(e) if e.retryable() => continue,
                        Err(e) => {
                            tracing::warn!(room = %record.channel_id, error = %e, "matrix: leaving failed; recorded as closed")
                        }
                        Ok(()) => {}
                    }
                    record.closed_at = Some(unix_millis_now());
                    let _ = shared.store.put_channel(&record).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "matrix: cannot list open rooms"),
        }
        let wait = u64::try_from(next.saturating_sub(unix_millis_now())).unwrap_or(0);
        let until = Instant::now() + Duration::from_millis(wait.max(100));
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(until) => break,
                Some(task) = moves.recv() => adopt_if_open(&shared, &task).await,
                () = shared.stop.cancelled() => return,
            }
        }
    }
}

/// Adopts `task`'s room if it has an open one no poster serves here (its state just changed
/// on this instance: the task may have been taken over from another one).
async fn adopt_if_open(shared: &Arc<Shared>, task: &TaskId) {
    if !moved_here(shared, task).await {
        return;
    }
    match shared.store.channel(INTEGRATION, task).await {
        Ok(Some(record))
            if create::is_room_id(&record.channel_id)
                && record.close_at.is_none()
                && record.closed_at.is_none() =>
        {
            post_here(shared, task);
        }
        Ok(_) => {}
        // The sweeper's next pass looks again.
        Err(e) => tracing::debug!(task = %task, error = %e, "matrix: cannot read the room record"),
    }
}

/// Frees the alias of a room being closed, so it names no room once the bot has left; `false`
/// when the homeserver is unreachable (the sweep tries again).
async fn release_alias(shared: &Shared, task: &TaskId) -> bool {
    let me = match shared.me.get() {
        Some(me) => me.clone(),
        None => match shared.client.whoami().await {
            Ok(me) => shared.me.get_or_init(|| me).clone(),
            Err(e) => return !e.retryable(),
        },
    };
    let Some(alias) = create::alias(task, &me) else {
        return true;
    };
    match shared.client.delete_alias(&alias).await {
        Ok(()) => true,
        Err(e) if e.retryable() => false,
        Err(e) => {
            tracing::warn!(%alias, error = %e, "matrix: removing the room's alias failed");
            true
        }
    }
}
