//! What Handoff's integrations (Letta, Matrix) share. They are plug-ins the composition root
//! builds: they read tasks and record what they did through a [`TaskSource`] it implements
//! over the engine (they never see the engine itself), and they follow the engine's notices
//! with one worker per task, woken through the task's [`Slot`] ([`Workers`]).

mod source;
mod workers;

pub use source::{
    PendingRequest, ResultDelivery, SourceError, TaskOverview, TaskSource, step_note,
};
pub use workers::{Slot, Workers};
