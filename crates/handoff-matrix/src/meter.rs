//! What the integration reports as it works, for the operator's `/metrics`; the composition
//! root supplies the counters.

/// How a task's room came to be known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoomOrigin {
    /// Created by this process.
    Created,
    /// Found by its alias: an earlier process created it and died before recording it.
    Adopted,
}

/// Receives the integration's counts.
pub trait MatrixMeter: Send + Sync + 'static {
    /// A task's room was created or adopted.
    fn room_opened(&self, origin: RoomOrigin);

    /// A task's room could not be created (the homeserver refused; noted in the task).
    fn room_failed(&self);

    /// The homeserver accepted a message the bot posted.
    fn message_posted(&self);

    /// A message attempt failed (every failed attempt counts, retried or not).
    fn message_failed(&self);

    /// A command or message from a room was applied to its task (`applied`) or refused to its
    /// sender (not allowed, or the task said no).
    fn command_handled(&self, applied: bool);
}

/// A meter that counts nothing (tests, servers without metrics).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoMeter;

impl MatrixMeter for NoMeter {
    fn room_opened(&self, _: RoomOrigin) {}
    fn room_failed(&self) {}
    fn message_posted(&self) {}
    fn message_failed(&self) {}
    fn command_handled(&self, _: bool) {}
}
