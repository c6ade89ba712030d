//! What a supervisor publishes about its run, so the run's driver reads it where it is instead
//! of asking: the stop Handoff decided on and whether a Stop hook already refused the run's
//! end. Only the supervisor writes it (a `watch` it alone holds the sender of).

use crate::finish::StopReason;

/// The run's live state as its supervisor last published it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RunState {
    /// The stop Handoff decided on, if any: the first decision stands.
    pub stop: Option<StopReason>,
    /// A Stop hook already refused this run's end.
    pub stop_hook_active: bool,
}
