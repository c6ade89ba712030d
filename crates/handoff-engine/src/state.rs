//! The engine's state: what every part shares ([`Shared`]) and the routes to the live runs'
//! supervisors. Only the engine's own modules hold this; a supervisor holds only [`Shared`].

use std::{ops::Deref, sync::Arc};

use crate::{peer_wakes::Peers, shared::Shared, supervisor::Supervisors};

/// The engine's state: the shared handles and the mailbox of each run this process supervises.
pub(crate) struct EngineState {
    shared: Arc<Shared>,
    /// The mailbox of each run this process supervises.
    pub supervisors: Supervisors,
    /// Wake-ups from the other instances sharing the store.
    pub peers: Peers,
    /// The model gateway's key, URL and per-task totals.
    pub gateway: Arc<crate::gateway_state::GatewayState>,
    /// The tasks pooled agents' model tokens serve.
    pub slots: crate::gateway_slots::GatewaySlots,
    /// How often tasks and agents may call a model through the gateway.
    pub gateway_rates: crate::gateway_rate::GatewayRates,
}

impl EngineState {
    /// The state of a new engine, no run supervised yet.
    pub(crate) fn new(shared: Shared) -> Self {
        let gateway_rates = crate::gateway_rate::GatewayRates::new(&shared.config.models);
        Self {
            shared: Arc::new(shared),
            supervisors: Supervisors::default(),
            peers: Peers::default(),
            gateway: Arc::default(),
            slots: crate::gateway_slots::GatewaySlots::default(),
            gateway_rates,
        }
    }

    /// The handles a supervisor gets.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

// Every part reads settings and handles as `state.store`, `state.config`…: the state is its
// shared part plus the supervisors.
impl Deref for EngineState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}
