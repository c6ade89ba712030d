//! The integrations this instance plugs into the engine: each follows every task through the
//! engine's outbox and reads through the engine's public queries as an operator principal of
//! its own, so it sees exactly what `get_task_status` shows and never reaches inside.

mod letta;
mod matrix;
mod source;
mod start;

pub(crate) use letta::LettaPlugin;
pub(crate) use matrix::{MatrixPlugin, PipelineSteering};
pub(crate) use start::{Started, start};
