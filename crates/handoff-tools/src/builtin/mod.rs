//! Tools every Handoff instance serves regardless of which subsystems are enabled (their
//! arguments and results are wire types in `handoff-protocol`).

mod health;
mod ping;
mod text;
mod tool_output;

// The wire types these tools speak, where they were before `handoff-protocol` existed.
pub use handoff_protocol::builtin::{
    ComponentReport, HealthArgs, HealthReport, InstanceReport, PingArgs, PingOutput,
    ReadToolOutputArgs, ReadToolOutputOutput, TaskCounts,
};
pub use health::{HealthTool, ServiceStatus};
pub use ping::PingTool;
pub use tool_output::ReadToolOutputTool;

/// Handoff's version, as reported by `ping`, `health` and `server/discover`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

fn unix_millis(at: std::time::SystemTime) -> u64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolRegistry;

    /// Golden schemas: a change to a tool's wire contract shows up in review.
    #[test]
    fn tool_schemas_are_stable() {
        let mut registry = ToolRegistry::new();
        registry
            .register(PingTool)
            .and_then(|r| r.register(HealthTool::new(ServiceStatus::new())))
            .and_then(|r| {
                r.register(ReadToolOutputTool::new(
                    handoff_policy::output::SpillDir::under(std::path::Path::new("/data")),
                ))
            })
            .unwrap();
        for def in registry.definitions() {
            insta::assert_json_snapshot!(
                format!("{}_schema", def.name),
                serde_json::json!({
                    "input": *def.input_schema,
                    "output": *def.output_schema,
                })
            );
        }
    }
}
