//! How often a task, and an agent across its tasks, may call a model through the gateway
//! (`models.task_calls_per_minute`, `models.agent_calls_per_minute`): a runaway agent must not
//! spend the provider account's own rate limit for every other task.
//!
//! In memory for one instance; in the store (the same buckets every instance draws on) when
//! several share it, as the submission rate is.

use std::time::Duration;

use handoff_config::ModelsConfig;
use handoff_store::{Store, StoreError};
use handoff_task::Task;

use crate::rate::KeyedRate;

/// The gateway's call rates per task and per agent.
pub(crate) struct GatewayRates {
    task: KeyedRate,
    agent: KeyedRate,
}

/// Which rate a refused call met, and when the next call may come.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RateRefusal {
    /// `models.task_calls_per_minute` or `models.agent_calls_per_minute`.
    pub setting: &'static str,
    /// How long until a call is admitted.
    pub retry_after: Duration,
}

impl GatewayRates {
    /// The rates `models` sets (a minute's calls may come at once).
    pub(crate) fn new(models: &ModelsConfig) -> Self {
        let rate = |what, per_minute: Option<u32>| {
            KeyedRate::new(what, per_minute, per_minute.unwrap_or(1))
        };
        Self {
            task: rate("gateway-task", models.task_calls_per_minute),
            agent: rate("gateway-agent", models.agent_calls_per_minute),
        }
    }

    /// Takes one call of `task` from its own bucket, then from its agent's.
    pub(crate) async fn take(
        &self,
        store: &dyn Store,
        task: &Task,
    ) -> Result<Result<(), RateRefusal>, StoreError> {
        let checks = [
            (&self.task, task.id.as_str(), "models.task_calls_per_minute"),
            (
                &self.agent,
                task.agent_id.as_str(),
                "models.agent_calls_per_minute",
            ),
        ];
        for (rate, key, setting) in checks {
            if let Err(retry_after) = rate.take(store, key).await? {
                return Ok(Err(RateRefusal {
                    setting,
                    retry_after,
                }));
            }
        }
        Ok(Ok(()))
    }
}
