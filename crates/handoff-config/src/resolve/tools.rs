//! The `[tools]` section.

use std::time::Duration;

use handoff_policy::{loop_guard::Ladder, output::Cap};

use super::Resolver;
use crate::{ByteSize, ConfigError, PermissionPolicy, ToolOutputLimits, ToolsConfig};

/// The tool pipeline: permissions, the loop guard, output caps.
pub(super) fn tools(r: &mut Resolver) -> Result<ToolsConfig, ConfigError> {
    let tools = ToolsConfig {
        permissions: r.get("tools.permissions", PermissionPolicy::allow_all())?,
        loop_guard: {
            let ladder = Ladder {
                warn: r.get("tools.loop_guard_warn", Ladder::default().warn)?,
                deny: r.get("tools.loop_guard_deny", Ladder::default().deny)?,
                stop: r.get("tools.loop_guard_stop", Ladder::default().stop)?,
            };
            r.check("tools.loop_guard_stop", ladder, |l| {
                if 1 <= l.warn && l.warn <= l.deny && l.deny <= l.stop {
                    Ok(())
                } else {
                    Err("the loop guard needs 1 <= warn <= deny <= stop".to_owned())
                }
            })?
        },
        loop_guard_window: Duration::from_secs(r.get("tools.loop_guard_window_secs", 600u64)?),
        output: Cap {
            max_lines: r.get("tools.output_max_lines", 2000u64)? as usize,
            max_bytes: r.get("tools.output_max_bytes", ByteSize(50 * 1024))?.0 as usize,
            direction: Default::default(),
        },
        output_limits: r.get("tools.output_limits", ToolOutputLimits::default())?,
        spill_retention: Duration::from_secs(
            r.get("tools.spill_retention_days", 7u64)? * 24 * 3600,
        ),
    };
    Ok(tools)
}
