//! Who is calling, decided once at the edge from the credential presented — never from an
//! argument the caller chooses. Every route (MCP tools, CLI, dashboard, integrations) reaches
//! the engine with one of these.

use crate::{AgentId, Task};

/// The caller of an engine operation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Principal {
    /// An agent acting as itself: it reads and steers its own tasks and reads the tasks that
    /// list it among their observers.
    Agent(AgentId),
    /// An operator (a person at the CLI or dashboard, or one of Handoff's own integrations):
    /// it sees and steers every task; its name is recorded as who acted.
    Operator(AgentId),
}

impl Principal {
    /// The name recorded as who acted (the agent's id, or the operator's name).
    pub fn name(&self) -> &AgentId {
        match self {
            Principal::Agent(id) | Principal::Operator(id) => id,
        }
    }

    /// Whether it sees every task.
    pub fn is_operator(&self) -> bool {
        matches!(self, Principal::Operator(_))
    }

    /// Whether it may read `task` (status, history, files).
    pub fn can_read(&self, task: &Task) -> bool {
        match self {
            Principal::Operator(_) => true,
            Principal::Agent(id) => &task.agent_id == id || task.options.observers.contains(id),
        }
    }

    /// Whether it may steer `task` (cancel, pause, resume, message, answer).
    pub fn can_steer(&self, task: &Task) -> bool {
        match self {
            Principal::Operator(_) => true,
            Principal::Agent(id) => &task.agent_id == id,
        }
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Principal::Agent(id) => write!(f, "agent {id}"),
            Principal::Operator(id) => write!(f, "operator {id}"),
        }
    }
}
