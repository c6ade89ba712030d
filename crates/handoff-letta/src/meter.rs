//! What the integration reports about its work, to whatever counts it: the composition root
//! wires it to the process's metrics, so this crate depends on no metrics library and no
//! server code.

use std::time::Duration;

/// Receives the integration's counts as they happen. Calls are cheap and never fail.
pub trait SyncMeter: Send + Sync + 'static {
    /// Letta accepted a workspace block write (a create or an update).
    fn block_written(&self);

    /// A block write failed (every failed attempt counts, retried or not).
    fn block_write_failed(&self);

    /// Letta accepted a task's notification `after_end` after the task ended.
    fn notification_sent(&self, after_end: Duration);

    /// A notification attempt failed (every failed attempt counts, retried or not).
    fn notification_failed(&self);

    /// No notification was sent: the final result reached the caller in its sync call.
    fn notification_skipped(&self);
}

/// A meter that counts nothing (tests, tools without metrics).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoMeter;

impl SyncMeter for NoMeter {
    fn block_written(&self) {}
    fn block_write_failed(&self) {}
    fn notification_sent(&self, _: Duration) {}
    fn notification_failed(&self) {}
    fn notification_skipped(&self) {}
}
