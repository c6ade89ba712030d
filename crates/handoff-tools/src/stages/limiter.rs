//! Every tool result capped (per-tool limits, else the global one), the full text spilled.

use handoff_config::ToolsConfig;
use handoff_policy::output::{SpillDir, limit_value};
use serde_json::Value;

use crate::{ToolContext, ToolDefinition, pipeline::OutputLimiter};

/// Caps results and spills what was cut to `<data_dir>/tool-output`.
#[derive(Debug, Clone)]
pub struct SpillLimiter {
    spill: SpillDir,
    tools: ToolsConfig,
}

impl SpillLimiter {
    /// A limiter writing to `spill` with `tools`' caps.
    pub fn new(spill: SpillDir, tools: ToolsConfig) -> Self {
        Self { spill, tools }
    }
}

impl OutputLimiter for SpillLimiter {
    fn limit(&self, ctx: &ToolContext, tool: &ToolDefinition, output: Value) -> Value {
        // Bound to the caller: only it (and operators) can read the spilled text back. Made
        // only when something is cut: most results fit.
        let spill = || self.spill.owned_by(ctx.principal().as_ref());
        let (value, cuts) = limit_value(output, self.tools.limits_for(tool.name), &spill);
        if !cuts.is_empty() {
            let fields: Vec<serde_json::Value> = cuts
                .iter()
                .map(|cut| {
                    serde_json::json!({
                        "pointer": cut.pointer,
                        "original_bytes": cut.original_bytes,
                        "original_lines": cut.original_lines,
                        "output_id": cut.spill_id,
                        "path": cut.spill_id.as_ref().map(|id| spill().path().join(id)),
                    })
                })
                .collect();
            ctx.result_meta().set(
                "handoff/truncation",
                serde_json::json!({ "truncated": true, "fields": fields }),
            );
        }
        for cut in &cuts {
            tracing::info!(
                call_id = %ctx.call_id,
                tool = tool.name,
                pointer = %cut.pointer,
                original_bytes = cut.original_bytes,
                spill_id = cut.spill_id.as_deref(),
                "tool output truncated"
            );
        }
        value
    }

    fn limits(&self, tool: &ToolDefinition) -> Option<handoff_policy::output::Limits> {
        Some(self.tools.limits_for(tool.name))
    }

    fn limit_text(&self, ctx: &ToolContext, tool: &ToolDefinition, text: String) -> String {
        // Texts are short by design; a tight per-tool cap still cuts them, and the notice in
        // the cut text names the spilled whole.
        let spill = || self.spill.owned_by(ctx.principal().as_ref());
        let (value, cuts) = limit_value(
            Value::String(text),
            self.tools.limits_for(tool.name),
            &spill,
        );
        for cut in &cuts {
            tracing::info!(
                call_id = %ctx.call_id,
                tool = tool.name,
                original_bytes = cut.original_bytes,
                spill_id = cut.spill_id.as_deref(),
                "tool text truncated"
            );
        }
        match value {
            Value::String(text) => text,
            other => other.to_string(),
        }
    }
}
