//! The workspace block: what it says to the agent ([`BLOCK_DESCRIPTION`]), the value built from
//! a task snapshot ([`WorkspaceValue`]), and the cap that keeps every value within the block's
//! limit ([`fit_value`]).

mod fit;
mod text;
mod value;

pub use fit::fit_value;
pub use value::WorkspaceValue;

pub(crate) use text::{clip_bytes, clip_chars, duration_text, iso, title};

/// The block's description: how the agent should read it (Letta shows it beside the value).
pub const BLOCK_DESCRIPTION: &str = "Handoff task workspace (read-only; Handoff rewrites it). \
A JSON object about one coding task you delegated: `status` is queued, running, paused, \
input_required, completed, failed, timeout or cancelled; `summary` says what the task is and \
where it stands; `recent_events` lists its latest events oldest first (an entry with `pruned` \
counts older ones left out); `artifacts_index` names stored outputs by kind and size; \
`pending_input` lists questions waiting for your answer (answer with send_task_message); \
`evaluator` is the completion check's verdict. For everything else call Handoff's \
get_task_status, get_task_history or read_task_file with the `task_id`. The block is removed \
from your memory a while after the task ends; the history stays in Handoff.";
