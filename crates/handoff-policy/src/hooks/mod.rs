//! External hooks in Claude Code's wire format: commands configured per event (`PreToolUse`,
//! `PostToolUse`, `Stop`, `TaskStart`, `TaskEnd`) with a tool-name matcher, fed JSON on stdin,
//! answering by exit code (0 = parse stdout JSON, 2 = block with stderr as the reason, other =
//! non-blocking error) — run in parallel, identical commands once, merged deny > ask > allow.

mod config;
mod interpret;
mod process;
mod runner;
mod wire;

pub use config::{HookEvent, HookSpec, HooksConfig};
pub use interpret::HookResult;
pub use process::{ProcessEnd, ProcessOutput, run_command};
pub use runner::{HookRunner, HookVerdict};
pub use wire::{HookInput, HookOutput, HookSpecificOutput};
