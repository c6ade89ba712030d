//! The holder's side: take the commands posted to this instance, hand each to its run's
//! supervisor exactly as a local caller would, and post the answer back.

use std::{sync::Arc, time::Duration};

use handoff_store::PostedCommand;
use handoff_task::unix_millis_now;
use tokio::time::Instant;

use super::{
    files,
    wire::{Posted, WireReply},
};
use crate::{EngineError, state::EngineState, supervisor::TaskCommands};

/// How often this instance looks for commands without a wake-up.
const POLL: Duration = Duration::from_secs(1);
/// How long posted commands are kept (their callers stopped waiting long before).
const KEEP: Duration = Duration::from_secs(600);

/// Takes and answers this instance's commands until it leaves.
pub(super) async fn run(state: Arc<EngineState>) {
    let mut purged = Instant::now();
    loop {
        let woken = state.peers.posted.notified();
        match state
            .store
            .take_commands(&state.instance.id(), unix_millis_now())
            .await
        {
            Ok(commands) => {
                for command in commands {
                    // Each on a task of its own: a slow delivery must not hold up a cancel
                    // posted after it.
                    tokio::spawn(answer(state.clone(), command));
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not take the commands posted here"),
        }
        if purged.elapsed() >= KEEP {
            purged = Instant::now();
            purge(&state).await;
        }
        tokio::select! {
            () = state.instance.stop.cancelled() => return,
            () = woken => {}
            () = tokio::time::sleep(POLL) => {}
        }
    }
}

/// Hands one command to its run's supervisor (never onward to another instance), or answers
/// one file query from this instance's disk, and posts the answer.
async fn answer(state: Arc<EngineState>, posted: PostedCommand) {
    let reply = match serde_json::from_str::<Posted>(&posted.body) {
        Ok(Posted::Command(command)) => {
            WireReply::from_result(state.supervisors.send(&posted.task, command).await)
        }
        Ok(Posted::Query(query)) => files::answer(&state, &posted.task, query).await,
        Err(e) => WireReply::failed(EngineError::Internal(format!("an unreadable command: {e}"))),
    };
    let text = match serde_json::to_string(&reply) {
        Ok(text) => text,
        Err(e) => {
            tracing::error!(error = %e, "could not encode a command's reply");
            return;
        }
    };
    if let Err(e) = state
        .store
        .reply_command(posted.id, &text, unix_millis_now())
        .await
    {
        tracing::warn!(error = %e, task = %posted.task, "could not post a command's reply");
    }
}

async fn purge(state: &EngineState) {
    let keep = i64::try_from(KEEP.as_millis()).unwrap_or(i64::MAX);
    if let Err(e) = state
        .store
        .purge_commands(unix_millis_now().saturating_sub(keep))
        .await
    {
        tracing::warn!(error = %e, "could not purge old commands");
    }
}
