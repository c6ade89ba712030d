//! `health` (and `GET /health`): version, uptime, subsystem readiness and task counts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{call::tool_call, names};

/// One subsystem's readiness (store, executors, Letta, transports).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ComponentReport {
    /// Subsystem name.
    pub name: String,
    /// Whether it can do its job now.
    pub ready: bool,
    /// One line on its state.
    pub detail: String,
}

/// Task counts, reported once the task engine is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskCounts {
    /// Tasks running now.
    pub active: u64,
    /// Tasks waiting for a slot.
    pub queued: u64,
}

/// The health report served by the `health` tool and `GET /health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HealthReport {
    /// `ok` when every component is ready, else `degraded`.
    pub status: String,
    /// Server name.
    pub server: String,
    /// Server version.
    pub version: String,
    /// Milliseconds since start.
    pub uptime_ms: u64,
    /// Start time, milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    /// Each registered subsystem.
    pub components: Vec<ComponentReport>,
    /// Task counts (absent until the task engine reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TaskCounts>,
    /// The instances sharing the task store, oldest first (absent until the engine reports).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<InstanceReport>,
    /// The executors a task may name (absent until they are set up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executors: Option<ExecutorsReport>,
}

/// The executors `execute_task` offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutorsReport {
    /// The executor of a task that names none.
    pub default: String,
    /// Every executor available on this server, sorted.
    pub available: Vec<String>,
}

/// One Handoff instance sharing the task store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InstanceReport {
    /// The instance id (`<host>-<pid>-<random>`).
    pub id: String,
    /// Whether it is the instance answering.
    pub this: bool,
    /// When it started, milliseconds since the Unix epoch.
    pub started_at_ms: i64,
    /// Its last heartbeat, milliseconds since the Unix epoch.
    pub heartbeat_ms: i64,
    /// It is shutting down and claims nothing more.
    pub draining: bool,
    /// Active tasks whose lease it holds.
    pub tasks_held: u64,
}

/// Arguments of `health`: none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HealthArgs {}

tool_call! {
    HealthArgs => names::HEALTH, HealthReport;
}
