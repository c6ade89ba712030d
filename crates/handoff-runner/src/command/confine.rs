//! What confines a run besides its process group: the task's cgroup (freeze, kill, OOM) or its
//! container. Cgroup files are written on the blocking pool: freezing waits for the kernel.

use std::{path::PathBuf, sync::Arc};

use handoff_isolation::{IsolationError, cgroups::TaskCgroup, container};
use tokio::process::Command;

use crate::RunnerError;

/// A run's cgroup or container, if it has one.
#[derive(Debug, Default)]
pub(crate) struct Confinement {
    /// The task's cgroups, removed when the run is over.
    pub cgroup: Option<Arc<TaskCgroup>>,
    /// The `docker` client and the container's name.
    pub container: Option<(PathBuf, String)>,
}

impl Confinement {
    /// Freezes the whole run; `None` when only the process group can be stopped.
    pub(crate) async fn pause(&self) -> Option<Result<(), RunnerError>> {
        if let Some((docker, name)) = &self.container {
            return Some(docker_verb(docker, "pause", name).await);
        }
        let cgroup = self.cgroup.clone()?;
        Some(blocking(move || cgroup.freeze()).await)
    }

    /// Thaws what [`Confinement::pause`] froze.
    pub(crate) async fn resume(&self) -> Option<Result<(), RunnerError>> {
        if let Some((docker, name)) = &self.container {
            return Some(docker_verb(docker, "unpause", name).await);
        }
        let cgroup = self.cgroup.clone()?;
        Some(blocking(move || cgroup.thaw()).await)
    }

    /// Kills every process of the run, including those that left its process group, and
    /// returns once none is left (or the cgroup gave up).
    pub(crate) async fn kill(&self) {
        if let Some((docker, name)) = &self.container
            && let Err(e) = docker_verb(docker, "kill", name).await
        {
            tracing::debug!(error = %e, "docker kill");
        }
        if let Some(cgroup) = self.cgroup.clone()
            && let Err(e) = blocking(move || cgroup.kill()).await
        {
            tracing::warn!(error = %e, "could not empty the task's cgroup");
        }
    }

    /// Which of the run's limits it ran into, when one did: the kernel killed it for memory, or
    /// a fork failed at the process limit (the program then dies of its own error, whose exit
    /// code alone says nothing).
    pub(crate) async fn limit_reached(&self) -> Option<String> {
        self.hits().await?.reason()
    }

    /// Whether the kernel killed a process of the run for memory, in words: unlike a failed
    /// fork at the process limit, which the program may survive and handle, a kill took work
    /// away from the run.
    pub(crate) async fn killed_at_limit(&self) -> Option<String> {
        self.hits().await?.memory()
    }

    async fn hits(&self) -> Option<LimitHits> {
        let cgroup = self.cgroup.clone()?;
        tokio::task::spawn_blocking(move || LimitHits {
            oom_kills: cgroup.oom_kills(),
            memory_limit: cgroup.memory_limit(),
            pids_hits: cgroup.pids_limit_hits(),
            pids_limit: cgroup.pids_limit(),
        })
        .await
        .ok()
    }

    /// Removes the cgroup (after killing anything left in it).
    pub(crate) async fn remove(&self) {
        if let Some(cgroup) = self.cgroup.clone()
            && let Err(e) = blocking(move || cgroup.remove()).await
        {
            tracing::warn!(error = %e, "could not remove the task's cgroup");
        }
    }
}

/// What the kernel counted against a run's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LimitHits {
    oom_kills: u64,
    memory_limit: Option<u64>,
    pids_hits: u64,
    pids_limit: Option<u64>,
}

impl LimitHits {
    /// The kernel killed a process for memory.
    fn memory(self) -> Option<String> {
        (self.oom_kills > 0).then(|| match self.memory_limit {
            Some(bytes) => format!("out of memory (limit {})", human_bytes(bytes)),
            None => "out of memory".to_owned(),
        })
    }

    /// The run's end in words; memory first, as an OOM kill is the cause of death itself.
    fn reason(self) -> Option<String> {
        if let Some(memory) = self.memory() {
            return Some(memory);
        }
        (self.pids_hits > 0).then(|| match self.pids_limit {
            Some(pids) => format!("process limit reached (limit {pids})"),
            None => "process limit reached".to_owned(),
        })
    }
}

async fn blocking(
    f: impl FnOnce() -> Result<(), IsolationError> + Send + 'static,
) -> Result<(), RunnerError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| RunnerError::Isolation(e.to_string()))?
        .map_err(|e| RunnerError::Isolation(e.to_string()))
}

async fn docker_verb(docker: &std::path::Path, verb: &str, name: &str) -> Result<(), RunnerError> {
    let args = container::control_args(docker, verb, name);
    let Some((program, args)) = args.split_first() else {
        return Ok(());
    };
    let status = Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .map_err(|e| RunnerError::Isolation(format!("docker {verb}: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(RunnerError::Isolation(format!(
            "docker {verb} {name}: {status}"
        )))
    }
}

fn human_bytes(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes >= (1 << 30) && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= MIB {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::LimitHits;

    fn hits(oom_kills: u64, pids_hits: u64) -> LimitHits {
        LimitHits {
            oom_kills,
            memory_limit: Some(64 << 20),
            pids_hits,
            pids_limit: Some(64),
        }
    }

    #[test]
    fn a_limit_the_run_hit_is_named() {
        assert_eq!(hits(0, 0).reason(), None);
        assert_eq!(
            hits(1, 3).reason().as_deref(),
            Some("out of memory (limit 64 MiB)")
        );
        assert_eq!(
            hits(0, 3).reason().as_deref(),
            Some("process limit reached (limit 64)")
        );
    }

    #[test]
    fn only_a_memory_kill_counts_as_a_kill() {
        assert_eq!(
            hits(1, 0).memory().as_deref(),
            Some("out of memory (limit 64 MiB)")
        );
        // A refused fork is the program's to handle.
        assert_eq!(hits(0, 3).memory(), None);
    }
}
