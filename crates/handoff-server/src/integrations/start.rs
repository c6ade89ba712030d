//! Starting the integrations: each with its metrics when on, in the order the engine's
//! outbox feeds them.

use std::sync::Arc;

use handoff_config::Config;
use handoff_engine::{Engine, EngineError, Integration};
use handoff_tools::{FollowUps, builtin::ServiceStatus};
use prometheus_client::registry::Registry;

use super::{LettaPlugin, MatrixPlugin};
use crate::{
    http::{LettaMetrics, MatrixMetrics},
    store::OpenStore,
};

/// The started integrations and what the rest of the instance needs of them.
pub(crate) struct Started {
    /// Every integration, for the engine's outbox.
    pub integrations: Vec<Arc<dyn Integration>>,
    /// Letta's follow-ups for the tool pipeline, when Letta is on.
    pub follow_ups: Option<Arc<dyn FollowUps>>,
    /// The Matrix bridge, which reads commands once the pipeline exists.
    pub matrix_bridge: Option<handoff_matrix::MatrixBridge>,
    /// The Letta metrics and the sync whose backlog they show.
    pub letta_metrics: Option<(LettaMetrics, handoff_letta::WorkspaceSync)>,
    /// The Matrix metrics and the bridge whose open rooms they count.
    pub matrix_metrics: Option<(MatrixMetrics, handoff_matrix::MatrixBridge)>,
}

/// Starts Letta and Matrix where configured, registering their metrics in `metrics`.
pub(crate) fn start(
    config: &Arc<Config>,
    engine: &Engine,
    store: &OpenStore,
    metrics: &mut Registry,
    status: &Arc<ServiceStatus>,
) -> Result<Started, EngineError> {
    let letta_metrics = config
        .letta
        .api_url
        .is_some()
        .then(|| LettaMetrics::register(metrics));
    let meter: Arc<dyn handoff_letta::SyncMeter> = match &letta_metrics {
        Some(counted) => Arc::new(counted.clone()),
        None => Arc::new(handoff_letta::NoMeter),
    };
    let letta = LettaPlugin::start(config, engine, store.workspaces(), meter)?;
    let matrix_metrics = config
        .matrix
        .enabled()
        .then(|| MatrixMetrics::register(metrics));
    let matrix_meter: Arc<dyn handoff_matrix::MatrixMeter> = match &matrix_metrics {
        Some(counted) => Arc::new(counted.clone()),
        None => Arc::new(handoff_matrix::NoMeter),
    };
    let matrix = MatrixPlugin::start(config, engine, store.channels(), matrix_meter)?;
    let matrix_bridge = matrix.as_ref().map(|m| m.bridge().clone());
    let matrix_metrics = matrix_metrics.zip(matrix_bridge.clone());
    let letta_metrics = letta_metrics.zip(letta.as_ref().map(|l| l.sync().clone()));
    if let Some(letta) = &letta {
        // Letta is optional to tasks (writes and notifications wait and retry), so an
        // unreachable server is reported, not a reason to refuse traffic.
        let client = letta.sync().client().clone();
        let status = status.clone();
        let url = config.letta.api_url.clone().unwrap_or_default();
        tokio::spawn(async move {
            let detail = match client.health().await {
                Ok(h) => format!("Letta {} at {url} answers", h.version),
                Err(e) => format!(
                    "Letta at {url} not answering ({e}); block writes and notifications are retried"
                ),
            };
            status.set_component("letta", true, detail);
        });
    }
    let follow_ups = letta.as_ref().map(LettaPlugin::follow_ups);
    let integrations = letta
        .into_iter()
        .map(|plugin| Arc::new(plugin) as Arc<dyn Integration>)
        .chain(
            matrix
                .into_iter()
                .map(|plugin| Arc::new(plugin) as Arc<dyn Integration>),
        )
        .collect();
    Ok(Started {
        integrations,
        follow_ups,
        matrix_bridge,
        letta_metrics,
        matrix_metrics,
    })
}
