use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

/// Labels of the task-state gauge.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct StateLabels {
    pub state: &'static str,
}

/// Labels of the duration histogram: a bounded set (executor names are configured, outcomes are
/// the terminal states).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OutcomeLabels {
    pub executor: String,
    pub outcome: &'static str,
}

/// Labels of the counter of refused tool calls kept out of the audit store: canonical tool
/// names (`unknown` for names that are no tool) and error codes, both bounded sets.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RefusalLabels {
    pub tool: String,
    pub code: &'static str,
}

/// Labels of executor call counters.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CallLabels {
    pub executor: String,
    pub operation: &'static str,
    pub outcome: &'static str,
}

/// Labels of the model gateway's counters: the wire and the provider's status class.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct GatewayLabels {
    pub wire: &'static str,
    pub status: &'static str,
}

fn duration_histogram() -> Histogram {
    // 0.1 s … ~55 min: coding tasks run from seconds to most of an hour.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.1, 2.0, 16,
    ))
}

/// The engine's Prometheus metrics. Never labelled by task id, so the series count stays bounded.
#[derive(Debug, Clone)]
pub struct EngineMetrics {
    pub(crate) tasks: Family<StateLabels, Gauge>,
    pub(crate) queue_depth: Gauge,
    pub(crate) durations: Family<OutcomeLabels, Histogram, fn() -> Histogram>,
    pub(crate) executor_calls: Family<CallLabels, Counter>,
    pub(crate) submissions_refused: Family<StateLabels, Counter>,
    pub(crate) calls_refused_unrecorded: Family<RefusalLabels, Counter>,
    pub(crate) gateway_calls: Family<GatewayLabels, Counter>,
    pub(crate) gateway_tokens: Family<GatewayLabels, Counter>,
    pub(crate) gateway_cost: Family<GatewayLabels, Counter<f64, std::sync::atomic::AtomicU64>>,
}

impl EngineMetrics {
    /// Creates the metrics and registers them under `handoff_`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            tasks: Family::default(),
            queue_depth: Gauge::default(),
            durations: Family::new_with_constructor(duration_histogram),
            executor_calls: Family::default(),
            submissions_refused: Family::default(),
            calls_refused_unrecorded: Family::default(),
            gateway_calls: Family::default(),
            gateway_tokens: Family::default(),
            gateway_cost: Family::default(),
        };
        registry.register(
            "handoff_gateway_calls",
            "Model calls through the gateway, by wire and the provider's status class",
            metrics.gateway_calls.clone(),
        );
        registry.register(
            "handoff_gateway_tokens",
            "Input and output tokens of model calls through the gateway",
            metrics.gateway_tokens.clone(),
        );
        registry.register(
            "handoff_gateway_cost_usd",
            "What model calls through the gateway cost, by the configured prices",
            metrics.gateway_cost.clone(),
        );
        registry.register(
            "handoff_tasks",
            "Tasks in the store by state",
            metrics.tasks.clone(),
        );
        registry.register(
            "handoff_queue_depth",
            "Tasks waiting for a slot",
            metrics.queue_depth.clone(),
        );
        registry.register(
            "handoff_task_duration_seconds",
            "Run time of finished tasks by executor and outcome",
            metrics.durations.clone(),
        );
        registry.register(
            "handoff_executor_calls",
            "Calls into executors by operation and outcome",
            metrics.executor_calls.clone(),
        );
        registry.register(
            "handoff_submissions_refused",
            "execute_task calls refused, by reason",
            metrics.submissions_refused.clone(),
        );
        registry.register(
            "handoff_tool_calls_refused_unrecorded",
            "Refused tool calls counted here instead of the audit store (reads, unknown tools, rate-limited calls), by tool and code",
            metrics.calls_refused_unrecorded.clone(),
        );
        metrics
    }

    /// Metrics that are recorded but not exported (tests, benches).
    pub fn unregistered() -> Self {
        Self::register(&mut Registry::default())
    }

    pub(crate) fn executor_call(&self, executor: &str, operation: &'static str, ok: bool) {
        self.executor_calls
            .get_or_create(&CallLabels {
                executor: executor.to_owned(),
                operation,
                outcome: if ok { "ok" } else { "error" },
            })
            .inc();
    }

    /// Counts one model call through the gateway.
    pub(crate) fn gateway_call(&self, wire: &'static str, status: u16, tokens: u64, cost: f64) {
        let labels = GatewayLabels {
            wire,
            status: match status {
                200..=299 => "2xx",
                400..=499 => "4xx",
                500..=599 => "5xx",
                _ => "other",
            },
        };
        self.gateway_calls.get_or_create(&labels).inc();
        self.gateway_tokens.get_or_create(&labels).inc_by(tokens);
        self.gateway_cost.get_or_create(&labels).inc_by(cost);
    }

    /// Counts a refused tool call that is not written to the audit store.
    pub fn refused_call_unrecorded(&self, tool: &str, code: &'static str) {
        self.calls_refused_unrecorded
            .get_or_create(&RefusalLabels {
                tool: tool.to_owned(),
                code,
            })
            .inc();
    }

    /// How many refused calls of `tool` with `code` were counted instead of stored.
    pub fn refused_calls_unrecorded(&self, tool: &str, code: &'static str) -> u64 {
        self.calls_refused_unrecorded
            .get_or_create(&RefusalLabels {
                tool: tool.to_owned(),
                code,
            })
            .get()
    }

    pub(crate) fn refused(&self, reason: &'static str) {
        self.submissions_refused
            .get_or_create(&StateLabels { state: reason })
            .inc();
    }
}
