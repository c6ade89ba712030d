//! What a task's processes may do: the isolation level, the network mode and resource limits.

use serde::{Deserialize, Serialize};

/// How strongly an executor's processes are confined.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum IsolationLevel {
    /// Own process group only; the environment is inherited.
    None,
    /// Own session and process group, parent-death signal, scrubbed environment, rlimits.
    #[default]
    Process,
    /// `process` plus bubblewrap (read-only system, only the task directory writable, private
    /// `/tmp`, new pid/ipc/uts namespaces, no capabilities), Landlock and seccomp.
    Sandbox,
    /// A Docker container per task (only where a Docker engine answers).
    Container,
}

impl IsolationLevel {
    /// Every level, weakest first.
    pub const ALL: [IsolationLevel; 4] = [
        IsolationLevel::None,
        IsolationLevel::Process,
        IsolationLevel::Sandbox,
        IsolationLevel::Container,
    ];

    /// The level's configuration name.
    pub fn as_str(self) -> &'static str {
        match self {
            IsolationLevel::None => "none",
            IsolationLevel::Process => "process",
            IsolationLevel::Sandbox => "sandbox",
            IsolationLevel::Container => "container",
        }
    }
}

impl std::fmt::Display for IsolationLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for IsolationLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IsolationLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == s.trim())
            .ok_or_else(|| {
                format!("unknown isolation level {s:?} (none, process, sandbox, container)")
            })
    }
}

/// Whether sandboxed processes reach the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum NetworkMode {
    /// The host's network (agents must reach their model provider).
    #[default]
    Shared,
    /// Only a private loopback: no connection leaves the sandbox.
    Off,
}

impl std::str::FromStr for NetworkMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "shared" => Ok(NetworkMode::Shared),
            "off" => Ok(NetworkMode::Off),
            other => Err(format!("unknown network mode {other:?} (shared, off)")),
        }
    }
}

/// Resource limits for one task (enforced through cgroups).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Limits {
    /// Memory in bytes; the task is OOM-killed beyond it.
    pub memory_bytes: Option<u64>,
    /// CPU in thousandths of a core (1500 = one and a half cores).
    pub cpu_millicores: Option<u64>,
    /// Most processes and threads at once.
    pub pids: Option<u64>,
}

impl Limits {
    /// True when no limit is set.
    pub fn is_empty(&self) -> bool {
        self.memory_bytes.is_none() && self.cpu_millicores.is_none() && self.pids.is_none()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_and_order() {
        assert_eq!(
            "sandbox".parse::<IsolationLevel>().unwrap(),
            IsolationLevel::Sandbox
        );
        assert!("jail".parse::<IsolationLevel>().is_err());
        assert!(IsolationLevel::Sandbox > IsolationLevel::Process);
        assert_eq!("off".parse::<NetworkMode>().unwrap(), NetworkMode::Off);
    }
}
