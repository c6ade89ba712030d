//! The Letta integration's metrics: what it reports through [`SyncMeter`] as it works, and
//! the work its records still owe, read from the store at each scrape.

use std::time::Duration;

use handoff_letta::{SyncMeter, WorkspaceSync};
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkLabels {
    work: &'static str,
}

/// Counters, the latency histogram and the backlog gauges of the Letta integration.
#[derive(Debug, Clone)]
pub(crate) struct LettaMetrics {
    block_writes: Counter,
    block_write_failures: Counter,
    notifications_sent: Counter,
    notification_failures: Counter,
    notifications_skipped: Counter,
    notification_latency: Histogram,
    pending: Family<WorkLabels, Gauge>,
}

impl LettaMetrics {
    /// Creates the metrics and registers them under `handoff_letta_`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            block_writes: Counter::default(),
            block_write_failures: Counter::default(),
            notifications_sent: Counter::default(),
            notification_failures: Counter::default(),
            notifications_skipped: Counter::default(),
            // 0.1 s … ~55 min: a final write and a send take under a second with Letta up, and
            // retries stretch that to minutes while it is down.
            notification_latency: Histogram::new(
                prometheus_client::metrics::histogram::exponential_buckets(0.1, 2.0, 16),
            ),
            pending: Family::default(),
        };
        let letta = registry.sub_registry_with_prefix("handoff_letta");
        letta.register(
            "block_writes",
            "Workspace block writes (creates and updates) Letta accepted",
            metrics.block_writes.clone(),
        );
        letta.register(
            "block_write_failures",
            "Workspace block write attempts that failed, retried or not",
            metrics.block_write_failures.clone(),
        );
        letta.register(
            "notifications_sent",
            "Completion notifications Letta accepted",
            metrics.notifications_sent.clone(),
        );
        letta.register(
            "notification_failures",
            "Completion notification attempts that failed, retried or not",
            metrics.notification_failures.clone(),
        );
        letta.register(
            "notifications_skipped",
            "Completion notifications not sent because the final result reached the agent in its sync call",
            metrics.notifications_skipped.clone(),
        );
        letta.register(
            "notification_latency_seconds",
            "Time from a task's end to Letta accepting its notification",
            metrics.notification_latency.clone(),
        );
        letta.register(
            "pending",
            "Work the Letta records still owe: block_writes, notifications, detaches, deletes",
            metrics.pending.clone(),
        );
        metrics
    }

    /// Reads the backlog from the store into the gauges; a failed read leaves them as they were.
    pub(crate) async fn refresh(&self, sync: &WorkspaceSync) {
        let backlog = match sync.backlog().await {
            Ok(backlog) => backlog,
            Err(e) => {
                tracing::warn!(error = %e, "cannot count the Letta backlog");
                return;
            }
        };
        for (work, n) in [
            ("block_writes", backlog.block_writes),
            ("notifications", backlog.notifications),
            ("detaches", backlog.detaches),
            ("deletes", backlog.deletes),
        ] {
            self.pending
                .get_or_create(&WorkLabels { work })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }
}

impl SyncMeter for LettaMetrics {
    fn block_written(&self) {
        self.block_writes.inc();
    }

    fn block_write_failed(&self) {
        self.block_write_failures.inc();
    }

    fn notification_sent(&self, after_end: Duration) {
        self.notifications_sent.inc();
        self.notification_latency.observe(after_end.as_secs_f64());
    }

    fn notification_failed(&self) {
        self.notification_failures.inc();
    }

    fn notification_skipped(&self) {
        self.notifications_skipped.inc();
    }
}
