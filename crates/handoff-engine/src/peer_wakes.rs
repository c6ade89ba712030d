//! The wake-ups the other instances sharing the store send this one, kept in the engine state.
//! Turning the store's signals into them and waiting on them is `peers`'s work; the type sits
//! in a leaf so that the state can hold it without importing that work.

use tokio::sync::Notify;

/// Wake-ups from the other instances.
#[derive(Default)]
pub(crate) struct Peers {
    /// A command was posted to this instance.
    pub(crate) posted: Notify,
    /// Some command was answered (each waiter re-reads its own).
    pub(crate) replied: Notify,
}
