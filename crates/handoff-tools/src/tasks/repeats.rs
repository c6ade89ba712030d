//! The loop guard's rule for `execute_task`. Handing over the same work again once it has
//! finished is not a loop, so only identical submissions whose tasks are still queued, running,
//! paused or waiting for input count. The pipeline's guard judges a call before it runs and
//! cannot see which tasks are still active, so the store judges a submission as it inserts it:
//! every instance sharing the store counts the same tasks, and racing twins count each other.

use std::time::Duration;

use crate::{ToolError, stages::digest};
use handoff_policy::loop_guard::{Ladder, call_key};
use handoff_protocol::{names::EXECUTE_TASK as TOOL, tasks::ExecuteTaskArgs};
use handoff_task::{RepeatGuard, TaskId};

/// The tools that judge their own repeats; the pipeline's loop guard leaves them alone.
pub const JUDGE_OWN_REPEATS: &[&str] = &[TOOL];

/// Refuses an agent's identical `execute_task` while too many of its twins are still active.
#[derive(Debug, Clone)]
pub struct RepeatedSubmissions {
    /// Refused from this many active identical submissions, this one included.
    limit: u32,
    window: Duration,
}

impl RepeatedSubmissions {
    /// Refuses at the ladder's first step, counting submissions within `window` of this one.
    pub fn new(ladder: Ladder, window: Duration) -> Self {
        Self {
            limit: ladder.warn,
            window,
        }
    }

    /// The guard a submission with `args` carries to the store. Two submissions of one agent
    /// are identical when the canonical JSON of their arguments is (as the pipeline's loop
    /// guard keys calls); the store keeps a digest of it, not the arguments again. `agent_id`
    /// is left out: the store counts per owner already, and an agent that names itself makes
    /// the same submission as one that does not.
    pub(crate) fn guard(&self, args: &ExecuteTaskArgs) -> Result<RepeatGuard, ToolError> {
        let mut args = serde_json::to_value(args).map_err(|e| ToolError::Internal {
            message: format!("{TOOL} arguments as JSON: {e}"),
        })?;
        if let Some(map) = args.as_object_mut() {
            map.remove("agent_id");
        }
        Ok(RepeatGuard {
            key: digest(&call_key(TOOL, &args)),
            limit: self.limit,
            window_ms: i64::try_from(self.window.as_millis()).unwrap_or(i64::MAX),
        })
    }

    /// The answer to a submission refused because `active` (oldest first) are still unfinished.
    pub(crate) fn refusal(&self, active: &[TaskId]) -> ToolError {
        let ids: Vec<String> = active.iter().map(ToString::to_string).collect();
        ToolError::Denied {
            tool: TOOL.to_owned(),
            reason: format!(
                "loop guard: this exact {TOOL} call was repeated {} times within {}s while \
                 the earlier tasks are still queued or running ({}), so it was not queued again; \
                 follow those with get_task_status, cancel them, or change the task",
                active.len() + 1,
                self.window.as_secs(),
                ids.join(", ")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(description: &str) -> ExecuteTaskArgs {
        serde_json::from_value(serde_json::json!({ "task_description": description })).unwrap()
    }

    #[test]
    fn identical_arguments_share_a_key_and_others_do_not() {
        let guard = RepeatedSubmissions::new(Ladder::default(), Duration::from_secs(600));
        let a = guard.guard(&args("fix it")).unwrap();
        assert_eq!(a.key, guard.guard(&args("fix it")).unwrap().key);
        assert_ne!(a.key, guard.guard(&args("fix it now")).unwrap().key);
        assert_eq!(a.key.len(), 64);
        let named: ExecuteTaskArgs = serde_json::from_value(
            serde_json::json!({ "task_description": "fix it", "agent_id": "agent-a" }),
        )
        .unwrap();
        assert_eq!(a.key, guard.guard(&named).unwrap().key);
        assert_eq!((a.limit, a.window_ms), (3, 600_000));
        // The digest is plain SHA-256, so every instance and build keys a call the same.
        assert_eq!(
            digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
