//! What an agent started ahead of its task is given to reach the model: the pool asks for it
//! when it starts the agent, under the agent's slot (the id its cgroup and home carry), because
//! the task it will serve is not known yet. The composition root supplies it (the model
//! gateway's URL and a token for the slot, which the engine binds to the task that claims the
//! agent). Nothing here is durable.

use handoff_task::TaskId;

/// The environment of agents started ahead of their tasks.
pub trait AgentEnv: Send + Sync + std::fmt::Debug {
    /// Variables to set for the agent started as `slot`, and variables it must not inherit
    /// (a provider's key).
    fn for_slot(&self, slot: &TaskId) -> (Vec<(String, String)>, Vec<String>);
}
