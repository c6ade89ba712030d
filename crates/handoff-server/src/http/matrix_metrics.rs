//! The Matrix integration's metrics: what it reports through [`MatrixMeter`] as it works, and
//! the rooms still open, read from the store at each scrape.

use handoff_matrix::{MatrixBridge, MatrixMeter, RoomOrigin};
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OriginLabels {
    origin: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

/// Counters and the open-rooms gauge of the Matrix integration.
#[derive(Debug, Clone)]
pub(crate) struct MatrixMetrics {
    rooms: Family<OriginLabels, Counter>,
    room_failures: Counter,
    messages: Counter,
    message_failures: Counter,
    commands: Family<OutcomeLabels, Counter>,
    open_rooms: Gauge,
}

impl MatrixMetrics {
    /// Creates the metrics and registers them under `handoff_matrix_`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            rooms: Family::default(),
            room_failures: Counter::default(),
            messages: Counter::default(),
            message_failures: Counter::default(),
            commands: Family::default(),
            open_rooms: Gauge::default(),
        };
        let matrix = registry.sub_registry_with_prefix("handoff_matrix");
        matrix.register(
            "rooms",
            "Task rooms made known: created, or adopted by their alias after a crash",
            metrics.rooms.clone(),
        );
        matrix.register(
            "room_failures",
            "Task rooms the homeserver refused to create",
            metrics.room_failures.clone(),
        );
        matrix.register(
            "messages",
            "Messages the homeserver accepted from the bot",
            metrics.messages.clone(),
        );
        matrix.register(
            "message_failures",
            "Message attempts that failed, retried or not",
            metrics.message_failures.clone(),
        );
        matrix.register(
            "commands",
            "Commands and messages from rooms: applied, or refused to their sender",
            metrics.commands.clone(),
        );
        matrix.register(
            "open_rooms",
            "Task rooms created and not yet left",
            metrics.open_rooms.clone(),
        );
        metrics
    }

    /// Reads the open rooms from the store into the gauge; a failed read leaves it as it was.
    pub(crate) async fn refresh(&self, bridge: &MatrixBridge) {
        if let Some(open) = bridge.open_rooms().await {
            self.open_rooms.set(i64::try_from(open).unwrap_or(i64::MAX));
        }
    }
}

impl MatrixMeter for MatrixMetrics {
    fn room_opened(&self, origin: RoomOrigin) {
        let origin = match origin {
            RoomOrigin::Created => "created",
            RoomOrigin::Adopted => "adopted",
        };
        self.rooms.get_or_create(&OriginLabels { origin }).inc();
    }

    fn room_failed(&self) {
        self.room_failures.inc();
    }

    fn message_posted(&self) {
        self.messages.inc();
    }

    fn message_failed(&self) {
        self.message_failures.inc();
    }

    fn command_handled(&self, applied: bool) {
        let outcome = if applied { "applied" } else { "refused" };
        self.commands
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }
}
