//! What failed calls cost: a token of the caller's submission rate.

use std::time::Duration;

use futures::future::BoxFuture;
use handoff_engine::Engine;
use handoff_task::AgentId;

use crate::pipeline::FailureRate;

/// Failed calls cost their caller a token of its submission rate (`tasks.submissions_per_minute`
/// and `tasks.submission_burst`; unlimited when that rate is 0): a stranger's stream of invalid
/// calls is slowed like a stream of submissions, on every instance sharing the store.
#[derive(Debug, Clone)]
pub struct SubmissionRateForFailures {
    engine: Engine,
}

impl SubmissionRateForFailures {
    /// Charges failed calls to `engine`'s per-agent submission rate.
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }
}

impl FailureRate for SubmissionRateForFailures {
    fn charge<'a>(&'a self, agent: Option<&'a AgentId>) -> BoxFuture<'a, Result<(), Duration>> {
        Box::pin(self.engine.charge_failed_call(agent))
    }
}
