//! The arguments and results of the tools every Handoff instance serves.

mod health;
mod ping;
mod tool_output;

pub use health::{
    ComponentReport, ExecutorsReport, HealthArgs, HealthReport, InstanceReport, TaskCounts,
};
pub use ping::{PingArgs, PingOutput};
pub use tool_output::{ReadToolOutputArgs, ReadToolOutputOutput};
