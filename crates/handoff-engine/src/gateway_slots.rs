//! Model tokens of agents started ahead of their tasks (see `handoff_runner::AgentEnv`): such
//! an agent is given a token made for its slot, since no task is known when it starts; the run
//! that claims it binds the slot to its task and claim, and the gateway then counts and caps
//! the slot's calls as that run's. A leaf: plain data, importing nothing of the engine's layers.
//!
//! In memory only: an agent waiting in a pool dies with the process that started it, and so
//! does every binding of one.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex, PoisonError},
};

use handoff_runner::AgentEnv;
use handoff_task::TaskId;

use crate::gateway_state::GatewayState;

/// Bindings kept at most; past it the oldest go (their runs ended long ago: a pool serves a
/// run each, and this many runs are not live on one process).
const MAX_BINDINGS: usize = 4096;

/// Which task and claim each claimed slot serves.
#[derive(Debug, Default)]
pub(crate) struct GatewaySlots {
    bound: Mutex<Bindings>,
}

#[derive(Debug, Default)]
struct Bindings {
    by_slot: HashMap<TaskId, (TaskId, i64)>,
    order: VecDeque<TaskId>,
}

impl GatewaySlots {
    /// The agent started as `slot` now serves `task`'s run under claim `fence`.
    pub(crate) fn bind(&self, slot: &TaskId, task: &TaskId, fence: i64) {
        let mut bound = self.bound.lock().unwrap_or_else(PoisonError::into_inner);
        if bound
            .by_slot
            .insert(slot.clone(), (task.clone(), fence))
            .is_none()
        {
            bound.order.push_back(slot.clone());
        }
        while bound.order.len() > MAX_BINDINGS {
            if let Some(oldest) = bound.order.pop_front() {
                bound.by_slot.remove(&oldest);
            }
        }
    }

    /// The task and claim `slot` serves, once a run claimed it.
    pub(crate) fn bound(&self, slot: &TaskId) -> Option<(TaskId, i64)> {
        let bound = self.bound.lock().unwrap_or_else(PoisonError::into_inner);
        bound.by_slot.get(slot).cloned()
    }
}

/// What a pooled agent of an executor the gateway serves is given: the gateway's URL and a
/// token made for its slot, and never the provider's key.
#[derive(Debug)]
pub(crate) struct SlotEnv {
    pub gateway: Arc<GatewayState>,
    pub key_envs: Vec<String>,
}

impl AgentEnv for SlotEnv {
    fn for_slot(&self, slot: &TaskId) -> (Vec<(String, String)>, Vec<String>) {
        // A slot's token carries claim 0: the binding, not the token, says which claim it serves.
        let env = self.gateway.env_for(slot, 0);
        let hidden = hidden_keys(&self.key_envs, &env);
        (env, hidden)
    }
}

/// The providers' key variables to keep from an agent given `env`: all but those `env` sets
/// itself (`OPENAI_API_KEY`, the usual place of a key, then holds the task's token; hiding it
/// would drop the token too).
pub(crate) fn hidden_keys(key_envs: &[String], env: &[(String, String)]) -> Vec<String> {
    key_envs
        .iter()
        .filter(|var| !env.iter().any(|(name, _)| name == *var))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> TaskId {
        TaskId::generate().unwrap()
    }

    #[test]
    fn a_key_variable_the_gateway_sets_is_overridden_not_hidden() {
        let env = vec![("OPENAI_API_KEY".to_owned(), "hmt1_token".to_owned())];
        let vars = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let hidden = hidden_keys(
            &vars(&["OPENAI_API_KEY", "UPSTREAM_KEY", "CLAUDE_KEY"]),
            &env,
        );
        assert_eq!(hidden, ["UPSTREAM_KEY", "CLAUDE_KEY"]);
    }

    #[test]
    fn a_slot_serves_the_run_that_bound_it_and_old_bindings_go() {
        let slots = GatewaySlots::default();
        let (slot, task) = (id(), id());
        assert_eq!(slots.bound(&slot), None);
        slots.bind(&slot, &task, 3);
        assert_eq!(slots.bound(&slot), Some((task.clone(), 3)));
        let later: Vec<TaskId> = (0..MAX_BINDINGS).map(|_| id()).collect();
        for other in &later {
            slots.bind(other, &task, 1);
        }
        assert_eq!(slots.bound(&slot), None, "the oldest binding went");
        assert!(slots.bound(&later[0]).is_some());
    }
}
