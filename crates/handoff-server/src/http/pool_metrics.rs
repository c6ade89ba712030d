//! The agent pools' gauges: how many started agents wait for a task, per executor, read from
//! the executors at each scrape.

use std::sync::Arc;

use handoff_runner::{AcpExecutor, Executor};
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{family::Family, gauge::Gauge},
    registry::Registry,
};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExecutorLabels {
    executor: String,
}

/// Waiting and kept agents of every executor with a pool.
#[derive(Debug, Clone)]
pub(crate) struct PoolMetrics {
    executors: Vec<Arc<AcpExecutor>>,
    ready: Family<ExecutorLabels, Gauge>,
    size: Family<ExecutorLabels, Gauge>,
}

impl PoolMetrics {
    /// Registers `handoff_executor_pool_ready` and `handoff_executor_pool_size`.
    pub(crate) fn register(registry: &mut Registry, executors: Vec<Arc<AcpExecutor>>) -> Self {
        let metrics = Self {
            executors,
            ready: Family::default(),
            size: Family::default(),
        };
        let pools = registry.sub_registry_with_prefix("handoff_executor_pool");
        pools.register(
            "ready",
            "Agents started ahead of tasks and waiting to be claimed",
            metrics.ready.clone(),
        );
        pools.register(
            "size",
            "Agents the executor keeps started ahead of tasks",
            metrics.size.clone(),
        );
        metrics
    }

    /// Reads every pool's counts into the gauges.
    pub(crate) fn refresh(&self) {
        for executor in &self.executors {
            let Some((ready, size)) = executor.pool() else {
                continue;
            };
            let labels = ExecutorLabels {
                executor: executor.name().to_owned(),
            };
            self.ready
                .get_or_create(&labels)
                .set(i64::try_from(ready).unwrap_or(i64::MAX));
            self.size
                .get_or_create(&labels)
                .set(i64::try_from(size).unwrap_or(i64::MAX));
        }
    }
}
