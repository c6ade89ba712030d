//! Isolation of executor processes. A level is chosen per executor (`none`, `process`,
//! `sandbox`, `container`); what the host can provide is detected at start-up; a task asking
//! for more than the host can give is refused (fail closed). The confinement itself is applied
//! by a small launcher (`handoff-isolate`, also `handoff isolate`) in the child before the agent
//! starts: cgroup membership, own session, parent-death signal, rlimits, then bubblewrap, and
//! inside it Landlock and seccomp — so no unsafe code runs between fork and exec. The same
//! program's `keeper` mode is the dead man's switch that freezes a stopped server's runs.

pub mod cgroups;
pub mod confine;
pub mod container;
mod detect;
mod docker_probe;
mod env;
mod error;
mod isolator;
pub mod keeper;
pub mod launch;
mod level;

pub use detect::HostCapabilities;
pub use docker_probe::DockerProbe;
pub use env::{ALWAYS_DENIED, DEFAULT_ALLOW, EnvPolicy};
pub use error::IsolationError;
pub use isolator::{IsolationConfig, Isolator, Prepared};
pub use level::{IsolationLevel, Limits, NetworkMode};
