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

    /// Why the run died, when the kernel killed it for memory.
    pub(crate) async fn out_of_memory(&self) -> Option<String> {
        let cgroup = self.cgroup.clone()?;
        let (kills, limit) =
            tokio::task::spawn_blocking(move || (cgroup.oom_kills(), cgroup.memory_limit()))
                .await
                .ok()?;
        (kills > 0).then(|| match limit {
            Some(bytes) => format!("out of memory (limit {})", human_bytes(bytes)),
            None => "out of memory".to_owned(),
        })
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
