//! Permission rules: an ordered list of `{permission, pattern, action}` built from layers
//! (defaults < global < project < agent < task) without reordering, judged last-match-wins,
//! with a configured deny that no later grant can lift.

mod command;
mod evaluate;
mod pattern;
mod preset;
mod stack;

pub use command::{CommandParts, split_command};
pub use evaluate::{Grant, PartVerdict, PermissionRequest, RuleSource, Verdict, pattern_covers};
pub use pattern::{is_command_permission, is_path_permission};
pub use preset::{OPENCODE_PERMISSIONS, preset_rules};
// The rules themselves are domain data (they travel with a task); this crate judges them.
pub use handoff_task::{PermissionAction, PermissionRule};
pub use stack::{Layer, RuleStack};
