//! Instances sharing one store reach each other's runs. A command for a task whose lease
//! another instance holds is posted to the store for that instance ([`route`]); the holder
//! takes it, hands it to the run's supervisor as a local caller would, and posts the answer
//! ([`serve`]). Each step wakes the other side through the store's signals (PostgreSQL
//! `NOTIFY`), backed by a short poll. What happens to tasks is told the same way
//! ([`notices`]), so waits on one instance follow a task running on another; and a task's
//! files are read on the instance whose disk holds them ([`files`]).
//!
//! Durable: the posted commands and their answers (the store). In memory: the wake-ups.

mod files;
mod notices;
mod rescued;
mod route;
mod serve;
mod wire;

use std::sync::Arc;

use handoff_store::StoreSignal;
use tokio::sync::broadcast;

pub(crate) use files::FilesAt;
pub(crate) use rescued::{answer_rescued, take_rescued};

use crate::{EngineError, state::EngineState};

/// Starts serving and following the other instances (a shared store only).
pub(crate) async fn start(state: &Arc<EngineState>) -> Result<(), EngineError> {
    if !state.store.is_shared() {
        return Ok(());
    }
    let signals = state.store.signals().await?;
    let (tx, rx) = tokio::sync::mpsc::channel(notices::QUEUE);
    state.outbox.forward_to(tx);
    tokio::spawn(notices::forward(state.clone(), rx));
    tokio::spawn(dispatch(state.clone(), signals));
    tokio::spawn(serve::run(state.clone()));
    Ok(())
}

/// Turns the store's signals into this instance's wake-ups until it leaves.
async fn dispatch(state: Arc<EngineState>, mut signals: broadcast::Receiver<StoreSignal>) {
    loop {
        let signal = tokio::select! {
            () = state.instance.stop.cancelled() => return,
            signal = signals.recv() => signal,
        };
        match signal {
            Ok(StoreSignal::CommandPosted { target }) if *target == *state.instance.id() => {
                state.peers.posted.notify_one();
            }
            Ok(StoreSignal::CommandReplied { .. }) => state.peers.replied.notify_waiters(),
            Ok(StoreSignal::Missed) | Err(broadcast::error::RecvError::Lagged(_)) => {
                state.peers.posted.notify_one();
                state.peers.replied.notify_waiters();
            }
            Ok(StoreSignal::Broadcast(body)) => notices::received(&state, &body),
            Ok(StoreSignal::CommandPosted { .. }) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
